package endpoints

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/secretbox"
	"github.com/hookinbox/hookinbox/internal/store"
)

// ResealCount is what a sealing pass did to one kind of secret.
type ResealCount struct {
	// Column is endpoint_secrets.secret, endpoints.api_key or
	// team_destinations.secret.
	Column string `json:"column"`
	// Sealed counts plain values sealed (and their plain column nulled).
	Sealed int `json:"sealed"`
	// Rekeyed counts sealed values re-encrypted under the current key.
	Rekeyed int `json:"rekeyed"`
}

// sealedColumn is one kind of secret for the bulk passes. Its select
// returns (row key, context part a, context part b, plain, sealed, key id)
// for $1 onlyPlain, $2 current key id, $3 batch size, locking the rows; its
// update takes ($1 row key, $2 sealed, $3 key id, $4 value's fingerprint,
// $5 its display fingerprint).
type sealedColumn struct {
	name        string
	selectSQL   string
	updateSQL   string
	context     func(a, b string) string
	fingerprint func(kr *secretbox.Keyring, v string) []byte
	// display is the column's display fingerprint (store.DisplaySecret,
	// store.DisplayAPIKey), "" when it has none.
	display string
	// missingSQL and fillSQL fill missing display fingerprints
	// (FillFingerprints): the rows lacking one, as selectSQL's, for $1
	// batch size; and ($1 row key, $2 display fingerprint).
	missingSQL, fillSQL string
}

var sealedColumns = []sealedColumn{
	{
		name: "endpoint_secrets.secret",
		selectSQL: `SELECT id::text, endpoint_slug, '', secret, secret_sealed, secret_key_id FROM endpoint_secrets
			 WHERE secret IS NOT NULL OR (NOT $1 AND secret_key_id <> $2)
			 ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED`,
		// A second row holding the same secret (possible only among rows
		// written before sealing) keeps its value but not the fingerprint:
		// nothing is lost and the UNIQUE index holds.
		updateSQL: `UPDATE endpoint_secrets s SET secret = NULL, secret_sealed = $2, secret_key_id = $3,
			secret_fingerprint = CASE WHEN EXISTS (SELECT 1 FROM endpoint_secrets o
				WHERE o.endpoint_slug = s.endpoint_slug AND o.secret_fingerprint = $4 AND o.id <> s.id) THEN NULL ELSE $4 END,
			display_fingerprint = $5
			 WHERE id = $1::bigint`,
		context:     func(slug, _ string) string { return store.SecretContext(slug) },
		fingerprint: store.SecretFingerprint,
		display:     store.DisplaySecret,
		missingSQL: `SELECT id::text, endpoint_slug, '', secret, secret_sealed, secret_key_id FROM endpoint_secrets
			 WHERE display_fingerprint IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`,
		fillSQL: `UPDATE endpoint_secrets SET display_fingerprint = $2 WHERE id = $1::bigint`,
	},
	{
		name: "endpoints.api_key",
		selectSQL: `SELECT slug, slug, '', api_key, api_key_sealed, api_key_key_id FROM endpoints
			 WHERE api_key IS NOT NULL OR (NOT $1 AND api_key_key_id <> $2)
			 ORDER BY slug LIMIT $3 FOR UPDATE SKIP LOCKED`,
		updateSQL: `UPDATE endpoints SET api_key = NULL, api_key_sealed = $2, api_key_key_id = $3, api_key_fingerprint = $5
			 WHERE slug = $1 AND $4::bytea IS NULL`,
		context: func(slug, _ string) string { return store.APIKeyContext(slug) },
		display: store.DisplayAPIKey,
		missingSQL: `SELECT slug, slug, '', api_key, api_key_sealed, api_key_key_id FROM endpoints
			 WHERE api_key_fingerprint IS NULL AND (api_key IS NOT NULL OR api_key_sealed IS NOT NULL)
			 ORDER BY slug LIMIT $1 FOR UPDATE SKIP LOCKED`,
		fillSQL: `UPDATE endpoints SET api_key_fingerprint = $2 WHERE slug = $1`,
	},
	{
		name: "team_destinations.secret",
		selectSQL: `SELECT id::text, workspace_id, name, secret, secret_sealed, secret_key_id FROM team_destinations
			 WHERE secret IS NOT NULL OR (NOT $1 AND secret_key_id <> $2)
			 ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED`,
		updateSQL: `UPDATE team_destinations SET secret = NULL, secret_sealed = $2, secret_key_id = $3
			 WHERE id = $1::bigint AND $4::bytea IS NULL AND $5::text IS NULL`,
		context: store.DestinationContext,
	},
	{
		// Never plain: a forward route's secret was sealed from the start.
		name: "forward_routes.secret",
		selectSQL: `SELECT name, name, '', NULL::text, secret_sealed, secret_key_id FROM forward_routes
			 WHERE NOT $1 AND secret_key_id <> $2
			 ORDER BY name LIMIT $3 FOR UPDATE SKIP LOCKED`,
		updateSQL: `UPDATE forward_routes SET secret_sealed = $2, secret_key_id = $3
			 WHERE name = $1 AND $4::bytea IS NULL AND $5::text IS NULL`,
		context: func(name, _ string) string { return store.ForwardContext(name) },
	},
	{
		// Never plain either; email rules have none.
		name: "notification_rules.secret",
		selectSQL: `SELECT name, name, '', NULL::text, secret_sealed, secret_key_id FROM notification_rules
			 WHERE NOT $1 AND secret_key_id <> $2
			 ORDER BY name LIMIT $3 FOR UPDATE SKIP LOCKED`,
		updateSQL: `UPDATE notification_rules SET secret_sealed = $2, secret_key_id = $3
			 WHERE name = $1 AND $4::bytea IS NULL AND $5::text IS NULL`,
		context: func(name, _ string) string { return store.NotificationContext(name) },
	},
}

// resealBatch is how many rows one transaction of a pass handles.
const resealBatch = 200

// SealPlaintext seals every secret still kept in a plain column (rows
// written before secrets were sealed) under the current key and nulls the
// plain column, in short transactions: safe to run beside the intake, to
// interrupt and to run again. `hookinbox migrate` runs it when a key is
// configured.
func SealPlaintext(ctx context.Context, s *store.Store) ([]ResealCount, error) {
	return reseal(ctx, s, true)
}

// Reseal re-encrypts every secret not sealed under the keyring's current
// key (and seals plain ones): `hookinbox secrets rotate-key`. Each batch
// commits on its own, so an interrupted pass resumes where it stopped, and
// a finished one finds nothing to do. A value sealed under a key the
// keyring lacks stops the pass with an error naming it; nothing is lost.
func Reseal(ctx context.Context, s *store.Store) ([]ResealCount, error) {
	return reseal(ctx, s, false)
}

// sealedRow is one row of a sealedColumn's select or missing query: the
// row key, the two parts of its context, and the value plain or sealed
// with its key id.
type sealedRow struct {
	key, a, b string
	plain     *string
	sealed    []byte
	keyID     *string
}

// querySealed runs q (a sealedColumn's selectSQL or missingSQL) and
// collects its rows.
func querySealed(ctx context.Context, tx pgx.Tx, q string, args ...any) ([]sealedRow, error) {
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (sealedRow, error) {
		var x sealedRow
		err := r.Scan(&x.key, &x.a, &x.b, &x.plain, &x.sealed, &x.keyID)
		return x, err
	})
}

func reseal(ctx context.Context, s *store.Store, onlyPlain bool) ([]ResealCount, error) {
	kr, err := s.Keyring()
	if err != nil {
		return nil, err
	}
	var out []ResealCount
	for _, col := range sealedColumns {
		c := ResealCount{Column: col.name}
		for {
			n := 0
			err := s.Tx(ctx, func(tx pgx.Tx) error {
				batch, err := querySealed(ctx, tx, col.selectSQL, onlyPlain, kr.CurrentID(), resealBatch)
				if err != nil {
					return err
				}
				for _, r := range batch {
					context := col.context(r.a, r.b)
					v, err := store.OpenValue(kr, r.plain, r.sealed, r.keyID, context)
					if err != nil {
						return fmt.Errorf("%s of row %s: %w", col.name, r.key, err)
					}
					sealed, id, err := kr.Seal([]byte(v), context)
					if err != nil {
						return err
					}
					var fp []byte
					if col.fingerprint != nil {
						fp = col.fingerprint(kr, v)
					}
					var display *string
					if col.display != "" {
						d := store.DisplayFingerprint(kr, col.display, v)
						display = &d
					}
					if _, err := tx.Exec(ctx, col.updateSQL, r.key, sealed, id, fp, display); err != nil {
						return fmt.Errorf("%s of row %s: %w", col.name, r.key, err)
					}
					if r.sealed == nil {
						c.Sealed++
					} else {
						c.Rekeyed++
					}
				}
				n = len(batch)
				return nil
			})
			if err != nil {
				return out, fmt.Errorf("seal %s: %w", col.name, err)
			}
			if n < resealBatch {
				break
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// FillFingerprints computes the display fingerprint of every signing
// secret and API key that has none (written before migration 0015), with
// the store's keyring, in short batches: `hookinbox migrate` runs it when
// a key is configured. It returns how many it filled.
func FillFingerprints(ctx context.Context, s *store.Store) (int, error) {
	kr, err := s.Keyring()
	if err != nil {
		return 0, err
	}
	filled := 0
	for _, col := range sealedColumns {
		if col.missingSQL == "" {
			continue
		}
		for {
			n := 0
			err := s.Tx(ctx, func(tx pgx.Tx) error {
				batch, err := querySealed(ctx, tx, col.missingSQL, resealBatch)
				if err != nil {
					return err
				}
				for _, r := range batch {
					v, err := store.OpenValue(kr, r.plain, r.sealed, r.keyID, col.context(r.a, r.b))
					if err != nil {
						return fmt.Errorf("%s of row %s: %w", col.name, r.key, err)
					}
					if _, err := tx.Exec(ctx, col.fillSQL, r.key, store.DisplayFingerprint(kr, col.display, v)); err != nil {
						return fmt.Errorf("%s of row %s: %w", col.name, r.key, err)
					}
				}
				n = len(batch)
				return nil
			})
			if err != nil {
				return filled, fmt.Errorf("fingerprints of %s: %w", col.name, err)
			}
			filled += n
			if n < resealBatch {
				break
			}
		}
	}
	return filled, nil
}

// SecretKeyCount is how many values of one kind are kept how.
type SecretKeyCount struct {
	Column string `json:"column"`
	// KeyID is the key that sealed them, "" for plain values.
	KeyID string `json:"key_id"`
	Count int    `json:"count"`
}

// SecretStatus counts the kept secrets by kind and key ("" = still plain).
func SecretStatus(ctx context.Context, s *store.Store) ([]SecretKeyCount, error) {
	rows, err := s.Pool.Query(ctx, `
		SELECT 'endpoint_secrets.secret', coalesce(secret_key_id, ''), count(*) FROM endpoint_secrets GROUP BY 2
		UNION ALL
		SELECT 'endpoints.api_key', coalesce(api_key_key_id, ''), count(*) FROM endpoints
		 WHERE api_key IS NOT NULL OR api_key_sealed IS NOT NULL GROUP BY 2
		UNION ALL
		SELECT 'team_destinations.secret', coalesce(secret_key_id, ''), count(*) FROM team_destinations
		 WHERE secret IS NOT NULL OR secret_sealed IS NOT NULL GROUP BY 2
		UNION ALL
		SELECT 'forward_routes.secret', secret_key_id, count(*) FROM forward_routes GROUP BY 2
		UNION ALL
		SELECT 'notification_rules.secret', secret_key_id, count(*) FROM notification_rules
		 WHERE secret_sealed IS NOT NULL GROUP BY 2
		ORDER BY 1, 2`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (SecretKeyCount, error) {
		var c SecretKeyCount
		err := r.Scan(&c.Column, &c.KeyID, &c.Count)
		return c, err
	})
}

// PlaintextSecrets counts secrets still kept in plain columns.
func PlaintextSecrets(ctx context.Context, s *store.Store) (int, error) {
	var n int
	err := s.Pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM endpoint_secrets WHERE secret IS NOT NULL) +
		(SELECT count(*) FROM endpoints WHERE api_key IS NOT NULL) +
		(SELECT count(*) FROM team_destinations WHERE secret IS NOT NULL)`).Scan(&n)
	return n, err
}
