package ops

import (
	"context"
	"fmt"
	"slices"

	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
)

// The keyring's side of the stored secrets: what each value is sealed
// under, and moving them all under the current key.

// ResealCount is what a sealing pass did to one kind of secret.
type ResealCount = endpoints.ResealCount

// SecretKeyCount is how many values of one kind are sealed under one key
// ("" for values still in a plain column).
type SecretKeyCount = endpoints.SecretKeyCount

// ActionSecretsReseal is the audited action of Reseal.
const ActionSecretsReseal = "secrets_reseal"

// ResealResult is what Reseal did.
type ResealResult struct {
	// KeyID is the keyring's current key, which now seals every value.
	KeyID   string        `json:"key_id"`
	Columns []ResealCount `json:"columns"`
	// ActionID is the audit entry.
	ActionID int64 `json:"operator_action"`
}

// Reseal re-encrypts every stored secret not sealed under the keyring's
// current key, and seals those still in a plain column: the second half of
// a key rotation (`hookinbox secrets rotate-key`). Batches commit on their
// own, so an interrupted pass resumes where it stopped when run again; a
// value sealed under a key the keyring lacks stops it with an error naming
// that key. Audited, with the counts; a pass that stops after changing
// rows is audited too, with its error. Without a keyring it is
// secretbox.ErrNoKey and nothing is done.
func (s *Service) Reseal(ctx context.Context, who Actor, reason string) (ResealResult, error) {
	if err := who.check(); err != nil {
		return ResealResult{}, err
	}
	kr, err := s.Store.Keyring()
	if err != nil {
		return ResealResult{}, err
	}
	res := ResealResult{KeyID: kr.CurrentID()}
	res.Columns, err = endpoints.Reseal(ctx, s.Store)
	changed := 0
	for _, c := range res.Columns {
		changed += c.Sealed + c.Rekeyed
	}
	if err != nil && changed == 0 {
		if store.IsPermissionDenied(err) {
			// The console's role: it seals, never opens (docs/security.md).
			return res, &ConflictError{Err: fmt.Errorf("this database role may not read the secrets it would re-encrypt " +
				"(the console runs as hookinbox_console, which never opens a secret): run 'hookinbox secrets rotate-key' " +
				"with the schema owner's DATABASE_URL; nothing was changed")}
		}
		return res, err
	}
	details := map[string]any{"key_id": res.KeyID, "columns": res.Columns}
	if err != nil {
		details["error"] = err.Error()
	}
	id, aerr := s.audit(ctx, s.Store.Pool, who, ActionSecretsReseal, "keyring:"+res.KeyID, reason, details)
	if err != nil {
		return res, err
	}
	res.ActionID = id
	return res, aerr
}

// SecretStatusView counts the stored secrets by kind and by the key that
// sealed them.
type SecretStatusView struct {
	// CurrentKeyID is the key that seals new values ("" without a keyring).
	CurrentKeyID string           `json:"current_key_id"`
	Counts       []SecretKeyCount `json:"counts"`
	// Missing are the keys some values are sealed under that the keyring
	// does not hold (those values cannot be opened); with no keyring, none
	// is reported.
	Missing []string `json:"missing_keys,omitempty"`
}

// SecretStatus counts the stored secrets by kind and key.
func (s *Service) SecretStatus(ctx context.Context) (SecretStatusView, error) {
	counts, err := endpoints.SecretStatus(ctx, s.Store)
	if err != nil {
		return SecretStatusView{}, err
	}
	v := SecretStatusView{Counts: counts}
	if kr := s.Store.Keys; kr != nil {
		v.CurrentKeyID = kr.CurrentID()
		for _, c := range counts {
			if c.KeyID != "" && !kr.Has(c.KeyID) && !slices.Contains(v.Missing, c.KeyID) {
				v.Missing = append(v.Missing, c.KeyID)
			}
		}
	}
	return v, nil
}

// PlaintextSecrets counts the secrets still kept in plain columns (written
// before secrets were sealed).
func (s *Service) PlaintextSecrets(ctx context.Context) (int, error) {
	return endpoints.PlaintextSecrets(ctx, s.Store)
}

// FillFingerprints computes, with the store's keyring, the display
// fingerprint of every signing secret and API key stored before they were
// kept (migration 0015); `hookinbox migrate` runs it. It returns how many.
func (s *Service) FillFingerprints(ctx context.Context) (int, error) {
	return endpoints.FillFingerprints(ctx, s.Store)
}

// SealPlaintext seals every secret still kept in a plain column under the
// current key and nulls the column, in short transactions (safe beside a
// running intake, and to run again). `hookinbox migrate` runs it, as a step
// of bringing the schema up to date rather than an operator's act: it
// changes no value, only how one is kept, and is not audited.
func (s *Service) SealPlaintext(ctx context.Context) ([]ResealCount, error) {
	return endpoints.SealPlaintext(ctx, s.Store)
}
