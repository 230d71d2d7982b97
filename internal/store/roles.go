package store

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// This file holds the database roles of hookinbox's processes and their
// privileges (issue #14, least privilege). Grants is the one explicit list:
// ApplyRoles creates the roles and applies it, ReapplyGrants applies it
// again after migrations. The statements are generated from the list and the
// catalog (not an embedded .sql file) because "every column but X" must be
// resolved against the columns that exist when they are applied; they run in
// one transaction, so a role never sees a half-applied set.

// The roles. They log in (unless created NOLOGIN, as group roles of login
// users managed elsewhere); the payload reader logs in only as the
// console's payload pool, and is granted to an operator who may read
// payloads.
const (
	// RoleIntake verifies, maps and inserts deliveries: reads endpoints
	// (never their provider API key, plain or sealed), secrets and links, inserts inbox and
	// quarantine rows, and never reads a payload back.
	RoleIntake = "hookinbox_intake"
	// RoleWorker handles events: what the activities, the sweepers,
	// reconciliation, the backfill and retention run. It never reads the
	// signing secrets nor the operator audit log.
	RoleWorker = "hookinbox_worker"
	// RoleOperator is the read-only operator CLI: no writes, no payload,
	// no API key, no secret.
	RoleOperator = "hookinbox_operator"
	// RoleConsole is the operator console and API: the operator's reads,
	// and only the writes its acts make (the audit, replays and their jobs,
	// quarantine resolutions, outbox releases, endpoint and workspace
	// management, its sessions). It reads no secret (it seals what admins
	// register, never opens one), no token or session hash, no payload
	// (those it reads on a pool of its own, as RolePayloadReader).
	RoleConsole = "hookinbox_console"
	// RolePayloadReader may read the payload columns. The console's payload
	// pool logs in as it; GRANT it to an operator (a login role that is also
	// a member of RoleOperator) who must see payloads: `inbox show
	// --payload`, `quarantine show --payload`, `outbox show`.
	RolePayloadReader = "hookinbox_payload_reader"
)

// Roles lists every role, process roles first.
var Roles = []string{RoleIntake, RoleWorker, RoleOperator, RoleConsole, RolePayloadReader}

// Grant is one privilege of a role on a table or view of schema public: on
// the whole relation (Columns and Except empty), on Columns only, or on
// every column but Except. Except is resolved from the catalog each time the
// grants are applied, so re-applying after a migration that adds a column
// extends the grant to it (`hookinbox migrate` does); a migration adding a
// column a role must not see adds it to Except.
type Grant struct {
	Role      string
	Privilege string // SELECT, INSERT, UPDATE or DELETE
	Table     string
	Columns   []string
	Except    []string
}

func cols(c ...string) []string { return c }

// secretMetaColumns are what a listing shows of a signing secret (ids,
// accounts, the keyed display fingerprint): never its value, sealed or
// plain, nor the lookup fingerprint.
var secretMetaColumns = cols("id", "endpoint_slug", "secret_key_id", "accounts", "created_at", "display_fingerprint")

// Grants is every privilege of every role. Whatever is not here is not
// granted: ApplyRoles and ReapplyGrants revoke everything else.
var Grants = slices.Concat([]Grant{
	// The intake (webhook package): the endpoint cache (GetIntakeEndpoint),
	// InsertInboxEvent (INSERT … ON CONFLICT DO NOTHING RETURNING id, then the
	// existing row's hash and status for the duplicate comparison) and
	// InsertQuarantine. RETURNING, the read-back and ON CONFLICT's arbiter
	// columns need SELECT on those columns only; the payload is written,
	// never read. No API key column, plain or sealed (api_key,
	// api_key_sealed, api_key_key_id): the intake never holds a provider API
	// key. The signing secrets: the plain column left from before sealing
	// (NULL once sealed), the sealed value with its key id, and the accounts
	// each may sign for; never their fingerprints (nothing to compare).
	{Role: RoleIntake, Privilege: "SELECT", Table: "endpoints", Columns: cols("slug", "provider", "environment", "account", "settings", "created_at")},
	{Role: RoleIntake, Privilege: "SELECT", Table: "endpoint_secrets", Columns: cols("id", "endpoint_slug", "secret",
		"secret_sealed", "secret_key_id", "accounts", "created_at", "display_fingerprint")},
	{Role: RoleIntake, Privilege: "SELECT", Table: "account_links", Columns: cols("endpoint_slug", "account", "workspace_id")},
	// Which types a forward route takes (the route table), never where
	// they go nor the secret.
	{Role: RoleIntake, Privilege: "SELECT", Table: "forward_routes", Columns: cols("name", "provider", "event_type",
		"replaces_handler", "retry_budget", "enabled", "applies_at")},
	{Role: RoleIntake, Privilege: "INSERT", Table: "webhook_inbox", Columns: cols("provider", "source_account", "environment",
		"event_id", "endpoint_slug", "workspace_id", "event_type", "resource_kind", "resource_id", "provider_version",
		"occurred_at", "payload", "body_sha256", "secret_id", "origin", "status", "last_error", "note", "processed_at",
		"replay_sha256", "object_id", "traceparent")},
	// The duplicate check reads the existing row's body hash, and the facts
	// that tell a backfilled event from a conflicting one (never the payload);
	// a body replayed under a new id is found by (endpoint_slug,
	// replay_sha256), store.BodySeen too.
	{Role: RoleIntake, Privilege: "SELECT", Table: "webhook_inbox", Columns: cols("id", "provider", "source_account",
		"environment", "event_id", "body_sha256", "status", "origin", "event_type", "resource_kind", "resource_id",
		"provider_version", "occurred_at", "endpoint_slug", "replay_sha256", "received_at", "last_error", "attempts")},
	// A body that dedups is still a duplicate after retention deleted its
	// row: the lineage kept its hash (InsertInboxEvent, BodySeen).
	{Role: RoleIntake, Privilege: "SELECT", Table: "event_lineage", Columns: cols("source", "source_id", "endpoint_slug",
		"replay_sha256", "deleted_at", "body_sha256", "status", "origin", "event_type", "resource_kind", "resource_id")},
	{Role: RoleIntake, Privilege: "INSERT", Table: "inbox_quarantine", Columns: cols("endpoint_slug", "provider",
		"source_account", "environment", "event_id", "reason", "detail", "payload", "body_sha256", "headers", "secret_id")},
	// ON CONFLICT (endpoint_slug, event_id, body_sha256) reads its arbiter
	// columns; store.BodySeen looks for an open entry holding the same body.
	{Role: RoleIntake, Privilege: "SELECT", Table: "inbox_quarantine", Columns: cols("endpoint_slug", "event_id", "body_sha256",
		"resolved_at")},

	// The worker: handlers (credits, subscriptions, feedback alerts), the
	// outbox, the sweepers, reconciliation and backfill (provider API keys:
	// GetProviderEndpoint, FindAPIEndpoint, ListScopes), retention and the
	// backlog gauges. Retention's batches lock with FOR UPDATE SKIP LOCKED,
	// which needs UPDATE on one column of the table (inbox_quarantine). The
	// whole of endpoints and team_destinations: the sealed API key and
	// destination secret (with their key ids) are opened with the worker's
	// secrets key to call providers and sign team webhooks.
	{Role: RoleWorker, Privilege: "SELECT", Table: "endpoints"},
	{Role: RoleWorker, Privilege: "SELECT", Table: "account_links"},
	{Role: RoleWorker, Privilege: "SELECT", Table: "webhook_inbox"},
	{Role: RoleWorker, Privilege: "INSERT", Table: "webhook_inbox"},
	{Role: RoleWorker, Privilege: "UPDATE", Table: "webhook_inbox"},
	{Role: RoleWorker, Privilege: "DELETE", Table: "webhook_inbox"},
	// The GitHub recovery asks whether a delivery was quarantined
	// (ReceivedDeliveries); the quarantine_opened notifications count open
	// entries by endpoint and attribute them to a workspace through their
	// source account (never a payload, never a header).
	{Role: RoleWorker, Privilege: "SELECT", Table: "inbox_quarantine", Columns: cols("id", "resolved_at", "endpoint_slug", "event_id",
		"source_account")},
	// Retention redacts resolved entries' payloads (UPDATE of payload) and
	// learns whether one is left from the size view, never reading a body.
	{Role: RoleWorker, Privilege: "UPDATE", Table: "inbox_quarantine", Columns: cols("resolved_at", "payload")},
	{Role: RoleWorker, Privilege: "SELECT", Table: "inbox_quarantine_payload_size"},
	{Role: RoleWorker, Privilege: "DELETE", Table: "inbox_quarantine"},
	{Role: RoleWorker, Privilege: "SELECT", Table: "workspaces"},
	// The built-in domains' tables (credits, credit notes, subscriptions,
	// feedback) and workspaces.credits_balance are granted by the domains'
	// own declarations (their migration sets' hookintype.Table values,
	// applied as extra grants), not here: an App without them has none.
	{Role: RoleWorker, Privilege: "SELECT", Table: "team_destinations"},
	{Role: RoleWorker, Privilege: "SELECT", Table: "outbox"},
	{Role: RoleWorker, Privilege: "INSERT", Table: "outbox"},
	// UPDATE covers retention's redaction of sent rows' payload and email destination.
	{Role: RoleWorker, Privilege: "UPDATE", Table: "outbox"},
	{Role: RoleWorker, Privilege: "SELECT", Table: "reconcile_divergences"},
	{Role: RoleWorker, Privilege: "INSERT", Table: "reconcile_divergences"},
	{Role: RoleWorker, Privilege: "SELECT", Table: "reconcile_checkpoints"},
	{Role: RoleWorker, Privilege: "INSERT", Table: "reconcile_checkpoints"},
	{Role: RoleWorker, Privilege: "UPDATE", Table: "reconcile_checkpoints"},
	// Retention's redactions and deletions keep each row's lineage
	// (triggers, as the worker: INSERT … ON CONFLICT DO UPDATE).
	{Role: RoleWorker, Privilege: "SELECT", Table: "event_lineage"},
	{Role: RoleWorker, Privilege: "INSERT", Table: "event_lineage"},
	{Role: RoleWorker, Privilege: "UPDATE", Table: "event_lineage"},
	{Role: RoleWorker, Privilege: "SELECT", Table: "hook_recoveries"},
	{Role: RoleWorker, Privilege: "INSERT", Table: "hook_recoveries"},
	{Role: RoleWorker, Privilege: "UPDATE", Table: "hook_recoveries"},
	// Forward routes: the worker reads them (the sealed secret too, opened
	// with its key to sign) and records each attempt.
	{Role: RoleWorker, Privilege: "SELECT", Table: "forward_routes"},
	{Role: RoleWorker, Privilege: "SELECT", Table: "forward_attempts"},
	{Role: RoleWorker, Privilege: "INSERT", Table: "forward_attempts"},
	// Coalesced sends, recorded before they go out (issue 34).
	{Role: RoleWorker, Privilege: "SELECT", Table: "forward_coalesced"},
	{Role: RoleWorker, Privilege: "INSERT", Table: "forward_coalesced"},
	// The public API's tx.Claim: insert once, read back who claimed first.
	{Role: RoleWorker, Privilege: "SELECT", Table: "business_claims"},
	{Role: RoleWorker, Privilege: "INSERT", Table: "business_claims"},
	// Notifications: the evaluation reads the rules (the sealed secret too:
	// the outbox's sender opens it with the worker's key to sign a webhook or
	// post to Slack), keeps each (rule, trigger, subject)'s state (created,
	// locked FOR UPDATE, moved) and records each notice it decides, in the
	// transaction that inserts the notice's outbox intent. It never changes
	// a rule, and never rewrites or deletes a recorded notice.
	{Role: RoleWorker, Privilege: "SELECT", Table: "notification_rules"},
	{Role: RoleWorker, Privilege: "SELECT", Table: "notification_states"},
	{Role: RoleWorker, Privilege: "INSERT", Table: "notification_states"},
	{Role: RoleWorker, Privilege: "UPDATE", Table: "notification_states"},
	{Role: RoleWorker, Privilege: "INSERT", Table: "notifications"},
	// The sweeper's sample of the console's trends (inbox.RecordTrendSample):
	// an upsert of this minute's row (ON CONFLICT … DO UPDATE reads it) and
	// the deletion of minutes past their retention. Counts only: it reads
	// no column of the inbox, quarantine or outbox it could not already.
	{Role: RoleWorker, Privilege: "SELECT", Table: "console_trends"},
	{Role: RoleWorker, Privilege: "INSERT", Table: "console_trends"},
	{Role: RoleWorker, Privilege: "UPDATE", Table: "console_trends"},
	{Role: RoleWorker, Privilege: "DELETE", Table: "console_trends"},

	// The payload reader: the payload columns, and the id a payload is
	// read by (GetInboxPayload, GetQuarantinePayload, GetOutboxPayload).
	{Role: RolePayloadReader, Privilege: "SELECT", Table: "webhook_inbox", Columns: cols("id", "payload")},
	{Role: RolePayloadReader, Privilege: "SELECT", Table: "inbox_quarantine", Columns: cols("id", "payload")},
	{Role: RolePayloadReader, Privilege: "SELECT", Table: "outbox", Columns: cols("id", "payload")},
}, operatorReads(RoleOperator), operatorReads(RoleConsole), consoleWrites)

// operatorReads are what the read-only operator reads, for role (the
// operator CLI's, and the console's: it shows what the CLI shows).
func operatorReads(role string) []Grant {
	g := []Grant{
		// The operator: read-only, no payload (the *_payload_size views give the
		// sizes), no provider API key and no destination secret, plain or sealed
		// (it may see which key sealed them), no signing secret (of
		// endpoint_secrets only the ids, accounts and display fingerprints), nor
		// the migration bookkeeping.
		{Role: role, Privilege: "SELECT", Table: "webhook_inbox", Except: cols("payload")},
		{Role: role, Privilege: "SELECT", Table: "webhook_inbox_payload_size"},
		{Role: role, Privilege: "SELECT", Table: "inbox_quarantine", Except: cols("payload")},
		{Role: role, Privilege: "SELECT", Table: "inbox_quarantine_payload_size"},
		{Role: role, Privilege: "SELECT", Table: "outbox", Except: cols("payload")},
		{Role: role, Privilege: "SELECT", Table: "outbox_payload_size"},
		{Role: role, Privilege: "SELECT", Table: "operator_actions"},
		{Role: role, Privilege: "SELECT", Table: "endpoints", Except: cols("api_key", "api_key_sealed")},
		{Role: role, Privilege: "SELECT", Table: "endpoint_secrets", Columns: secretMetaColumns},
		{Role: role, Privilege: "SELECT", Table: "account_links"},
		{Role: role, Privilege: "SELECT", Table: "workspaces"},
		{Role: role, Privilege: "SELECT", Table: "team_destinations", Except: cols("secret", "secret_sealed")},
		{Role: role, Privilege: "SELECT", Table: "reconcile_divergences"},
		{Role: role, Privilege: "SELECT", Table: "reconcile_checkpoints"},
		{Role: role, Privilege: "SELECT", Table: "event_lineage"},
		{Role: role, Privilege: "SELECT", Table: "replay_jobs"},
		// Who holds a console token, never its hash; who is signed in, never
		// a session's hash.
		{Role: role, Privilege: "SELECT", Table: "api_tokens", Except: cols("token_sha256")},
		{Role: role, Privilege: "SELECT", Table: "console_sessions", Except: cols("session_sha256")},
		{Role: role, Privilege: "SELECT", Table: "hook_recoveries"},
		{Role: role, Privilege: "SELECT", Table: "business_claims"},
		// Forward routes without their sealed secret, and every attempt.
		{Role: role, Privilege: "SELECT", Table: "forward_routes", Except: cols("secret_sealed")},
		{Role: role, Privilege: "SELECT", Table: "forward_attempts"},
		// Notification rules without their sealed secret (a webhook's
		// signing secret, a Slack URL's token), what is firing, and the
		// notices decided.
		{Role: role, Privilege: "SELECT", Table: "notification_rules", Except: cols("secret_sealed")},
		{Role: role, Privilege: "SELECT", Table: "notification_states"},
		{Role: role, Privilege: "SELECT", Table: "notifications"},
		// The trends (counts per minute) behind the console's charts and
		// GET /api/trends; the sweeper writes them.
		{Role: role, Privilege: "SELECT", Table: "console_trends"},
	}
	return g
}

// consoleWrites are the console's writes, each for an act of package ops
// the console or its API performs; the console reads as the operator does.
var consoleWrites = []Grant{
	// Every act is audited (InsertOperatorAction … RETURNING id).
	{Role: RoleConsole, Privilege: "INSERT", Table: "operator_actions"},
	// Forward routes (admin): add one (its secret sealed by the console's
	// keyring, never read back), change or pause it, remove it.
	{Role: RoleConsole, Privilege: "INSERT", Table: "forward_routes"},
	{Role: RoleConsole, Privilege: "UPDATE", Table: "forward_routes"},
	{Role: RoleConsole, Privilege: "DELETE", Table: "forward_routes"},
	// Replay: lock the row, put it back to pending (ReplayInboxEvent,
	// ResetInboxEvent); a bulk job's progress (replay_jobs).
	{Role: RoleConsole, Privilege: "UPDATE", Table: "webhook_inbox", Columns: cols("status", "attempts", "next_attempt_at",
		"pending_since", "last_error", "note", "processed_at", "sweeps", "swept_at")},
	{Role: RoleConsole, Privilege: "INSERT", Table: "replay_jobs"},
	{Role: RoleConsole, Privilege: "UPDATE", Table: "replay_jobs"},
	// Quarantine: re-admission inserts the row as the intake does (its
	// lineage is read from event_lineage), discard and re-admission close
	// the entry.
	{Role: RoleConsole, Privilege: "INSERT", Table: "webhook_inbox", Columns: cols("provider", "source_account", "environment",
		"event_id", "endpoint_slug", "workspace_id", "event_type", "resource_kind", "resource_id", "provider_version",
		"occurred_at", "payload", "body_sha256", "secret_id", "origin", "status", "last_error", "note", "processed_at",
		"replay_sha256", "object_id", "traceparent")},
	{Role: RoleConsole, Privilege: "UPDATE", Table: "inbox_quarantine", Columns: cols("resolved_at", "resolved_by", "resolution")},
	// Outbox release (ReleaseOutbox).
	{Role: RoleConsole, Privilege: "UPDATE", Table: "outbox", Columns: cols("status", "next_attempt_at", "policy")},
	// Endpoint management (admin): register, change, remove; secrets are
	// written sealed, never read (the UNIQUE lookup fingerprint is read by
	// ON CONFLICT: keyed, it tells nothing without the secrets key); links.
	{Role: RoleConsole, Privilege: "INSERT", Table: "endpoints", Columns: cols("slug", "provider", "environment", "account",
		"api_base_url", "api_key_sealed", "api_key_key_id", "settings", "api_key_fingerprint")},
	{Role: RoleConsole, Privilege: "UPDATE", Table: "endpoints", Columns: cols("account", "api_base_url", "api_key",
		"api_key_sealed", "api_key_key_id", "api_key_fingerprint", "settings")},
	{Role: RoleConsole, Privilege: "DELETE", Table: "endpoints"},
	{Role: RoleConsole, Privilege: "SELECT", Table: "endpoint_secrets", Columns: cols("secret_fingerprint")},
	{Role: RoleConsole, Privilege: "INSERT", Table: "endpoint_secrets", Columns: cols("endpoint_slug", "secret_sealed",
		"secret_key_id", "secret_fingerprint", "accounts", "display_fingerprint")},
	{Role: RoleConsole, Privilege: "UPDATE", Table: "endpoint_secrets", Columns: cols("secret_fingerprint", "accounts")},
	{Role: RoleConsole, Privilege: "DELETE", Table: "endpoint_secrets"},
	{Role: RoleConsole, Privilege: "INSERT", Table: "account_links"},
	{Role: RoleConsole, Privilege: "UPDATE", Table: "account_links", Columns: cols("workspace_id")},
	{Role: RoleConsole, Privilege: "DELETE", Table: "account_links"},
	// Workspaces (admin): create (a link, an email), the email, an erasure
	// (the payloads and addresses redacted, written without being read; the
	// lineage triggers run as the console; the team destinations' addresses
	// through hookinbox_erase_destinations, so the console never UPDATEs a
	// destination: none can be pointed elsewhere or enabled). A balance
	// correction through the ledger (credit_adjustments, credits_balance) is
	// granted by the credits domain's declaration.
	{Role: RoleConsole, Privilege: "INSERT", Table: "workspaces", Columns: cols("id", "email")},
	{Role: RoleConsole, Privilege: "UPDATE", Table: "workspaces", Columns: cols("email")},
	{Role: RoleConsole, Privilege: "UPDATE", Table: "webhook_inbox", Columns: cols("payload")},
	{Role: RoleConsole, Privilege: "UPDATE", Table: "inbox_quarantine", Columns: cols("payload")},
	{Role: RoleConsole, Privilege: "UPDATE", Table: "outbox", Columns: cols("payload", "destination", "last_error")},
	{Role: RoleConsole, Privilege: "INSERT", Table: "event_lineage"},
	{Role: RoleConsole, Privilege: "UPDATE", Table: "event_lineage"},
	// Notification rules (admin): add one (its secret sealed by the
	// console's keyring), remove one (its states go with it, by the foreign
	// key's cascade), and test one: the test sends through the rule's
	// channel now, so it opens the rule's sealed secret (a webhook's signing
	// secret, a Slack URL) with the console's key, as the worker does.
	{Role: RoleConsole, Privilege: "INSERT", Table: "notification_rules"},
	{Role: RoleConsole, Privilege: "DELETE", Table: "notification_rules"},
	{Role: RoleConsole, Privilege: "SELECT", Table: "notification_rules", Columns: cols("secret_sealed")},
}

// FunctionGrant is EXECUTE on a function of schema public, for role.
// Functions are granted to PUBLIC by default: the migrations that create
// hookinbox's revoke that, and these are the only grants.
type FunctionGrant struct {
	Role     string
	Function string // name(argument types), as GRANT names it
}

// FunctionGrants are the SECURITY DEFINER functions a process role may
// call instead of a privilege it must not hold: the console signs in
// through them (a token or a session is looked up by its hash, which its
// role may not read) and erases destinations; the intake re-queues the
// rows a new route applies to.
var FunctionGrants = []FunctionGrant{
	{Role: RoleConsole, Function: "hookinbox_token_by_hash(bytea)"},
	{Role: RoleConsole, Function: "hookinbox_session_start(bytea, bigint, interval)"},
	{Role: RoleConsole, Function: "hookinbox_session_token(bytea)"},
	{Role: RoleConsole, Function: "hookinbox_session_end(bytea)"},
	{Role: RoleConsole, Function: "hookinbox_erase_destinations(text)"},
	// A route just applied: the intake puts back to pending the rows it
	// recorded ignored for want of it (forwards.RequeueIgnored), through
	// this owner-run function, never by an UPDATE of the inbox.
	{Role: RoleIntake, Function: "hookinbox_requeue_ignored(text, text, timestamp with time zone)"},
}

// RoleOptions say how ApplyRoles creates or updates the roles.
type RoleOptions struct {
	// Passwords by role. A role without one keeps its password (none when
	// it is created: trust or certificate authentication, or set later).
	// Printable ASCII only; sent as a SCRAM-SHA-256 verifier computed here,
	// so the password itself never reaches the server or its logs.
	Passwords map[string]string
	// NoLogin creates the process roles NOLOGIN: group roles to grant to
	// login users managed elsewhere.
	NoLogin bool
	// Extra are privileges on a team's own tables (the public App's
	// WithMigrations), applied with Grants.
	Extra []Grant
}

// RoleChange is what ApplyRoles did to one role: "created", "updated" or
// "unchanged", and whether it set a password (never which).
type RoleChange struct {
	Role        string
	Action      string
	Login       bool
	PasswordSet bool
}

// TxBeginner is a pool or a connection.
type TxBeginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// ApplyRoles creates the roles that are missing, updates their login
// attribute and the given passwords, revokes every privilege they hold on
// schema public's tables, views and sequences and applies Grants, in one
// transaction. It is idempotent. Creating or altering a role needs CREATEROLE
// (or a superuser); granting needs the tables' owner (the migrator).
func ApplyRoles(ctx context.Context, db TxBeginner, o RoleOptions) ([]RoleChange, int, error) {
	for role, pw := range o.Passwords {
		if !slices.Contains(Roles, role) {
			return nil, 0, fmt.Errorf("password for unknown role %q", role)
		}
		if err := checkPassword(pw); err != nil {
			return nil, 0, fmt.Errorf("password of %s: %w", role, err)
		}
	}
	var changes []RoleChange
	var n int
	err := retryConcurrent(ctx, db, func(tx pgx.Tx) error {
		changes = changes[:0]
		for _, role := range Roles {
			login := !o.NoLogin
			c, err := ensureRole(ctx, tx, role, login, o.Passwords[role])
			if err != nil {
				return err
			}
			changes = append(changes, c)
		}
		var err error
		n, err = applyGrants(ctx, tx, Roles, o.Extra)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return changes, n, nil
}

// ReapplyGrants applies Grants again (revoking whatever else they hold) for
// the roles that exist, in one transaction, and returns those roles and the
// number of statements; none when no role exists. `hookinbox migrate` runs
// it after every migration, so a column added since is covered by the
// "every column but" grants and the role set never drifts from Grants.
// extra are privileges on a team's own tables, applied with Grants.
func ReapplyGrants(ctx context.Context, db TxBeginner, extra ...Grant) ([]string, int, error) {
	var present []string
	var n int
	err := retryConcurrent(ctx, db, func(tx pgx.Tx) error {
		var err error
		if present, err = existingRoles(ctx, tx); err != nil || len(present) == 0 {
			return err
		}
		n, err = applyGrants(ctx, tx, present, extra)
		return err
	})
	return present, n, err
}

// existingRoles lists which of Roles exist, in Roles order.
func existingRoles(ctx context.Context, db DB) ([]string, error) {
	rows, err := db.Query(ctx, `SELECT rolname FROM pg_roles WHERE rolname = ANY($1)`, Roles)
	if err != nil {
		return nil, fmt.Errorf("list roles: %w", err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list roles: %w", err)
	}
	var out []string
	for _, r := range Roles {
		if slices.Contains(found, r) {
			out = append(out, r)
		}
	}
	return out, nil
}

// ensureRole creates role or brings its login attribute and password to
// what is asked; it alters nothing when nothing differs (role attributes are
// shared by every database of the server).
func ensureRole(ctx context.Context, tx pgx.Tx, role string, login bool, password string) (RoleChange, error) {
	c := RoleChange{Role: role, Login: login, PasswordSet: password != ""}
	var canLogin bool
	err := tx.QueryRow(ctx, `SELECT rolcanlogin FROM pg_roles WHERE rolname = $1`, role).Scan(&canLogin)
	exists := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return c, fmt.Errorf("role %s: %w", role, err)
	}
	if exists && canLogin == login && password == "" {
		c.Action = "unchanged"
		return c, nil
	}
	sql := "CREATE ROLE "
	c.Action = "created"
	if exists {
		sql, c.Action = "ALTER ROLE ", "updated"
	}
	sql += pgx.Identifier{role}.Sanitize()
	if login {
		sql += " LOGIN"
	} else {
		sql += " NOLOGIN"
	}
	if password != "" {
		v, err := scramVerifier(password, nil)
		if err != nil {
			return c, err
		}
		// The verifier is base64 and '$', ':' only: safe as a literal.
		sql += " PASSWORD '" + v + "'"
	}
	if _, err := tx.Exec(ctx, sql); err != nil {
		return c, fmt.Errorf("%s role %s (needs CREATEROLE or a superuser): %w", strings.TrimSuffix(c.Action, "d"), role, err)
	}
	return c, nil
}

// applyGrants revokes what roles hold on schema public's relations, then
// grants their entries of Grants. It returns the number of statements run.
func applyGrants(ctx context.Context, tx pgx.Tx, roles []string, extra []Grant) (int, error) {
	var stmts []string
	for _, role := range roles {
		r := pgx.Identifier{role}.Sanitize()
		stmts = append(stmts,
			"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM "+r,
			"REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM "+r,
			"REVOKE ALL ON ALL FUNCTIONS IN SCHEMA public FROM "+r)
	}
	if err := checkExtra(extra); err != nil {
		return 0, err
	}
	widened, err := wideningStatements(ctx, tx, roles)
	if err != nil {
		return 0, err
	}
	stmts = append(stmts, widened...)
	columns := map[string][]string{}
	for _, g := range append(slices.Clip(Grants), extra...) {
		if !slices.Contains(roles, g.Role) {
			continue
		}
		s, err := grantStatement(ctx, tx, g, columns)
		if err != nil {
			return 0, err
		}
		stmts = append(stmts, s)
	}
	for _, f := range FunctionGrants {
		if slices.Contains(roles, f.Role) {
			stmts = append(stmts, "GRANT EXECUTE ON FUNCTION public."+f.Function+" TO "+pgx.Identifier{f.Role}.Sanitize())
		}
	}
	for _, role := range roles {
		more, err := accessStatements(ctx, tx, role)
		if err != nil {
			return 0, err
		}
		stmts = append(stmts, more...)
	}
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return 0, fmt.Errorf("%s: %w", s, err)
		}
	}
	return len(stmts), nil
}

// wideningStatements undo what a team's migration (run as the owner) may
// have granted past Grants, whoever it reaches through: PUBLIC's
// privileges on schema public's tables, sequences and functions (PUBLIC
// keeps only PostgreSQL's defaults on the database and the schema:
// CONNECT, TEMP and USAGE, which every process's connection relies on), a
// process role's membership of another role, and EXECUTE by PUBLIC on any
// SECURITY DEFINER function of the database (in any schema) but the ones
// FunctionGrants names (those are granted to their role only), and the
// attributes and settings of a process role that widen it
// (roleAttributeStatements). The REVOKEs FROM each role that follow undo
// the direct grants.
func wideningStatements(ctx context.Context, tx pgx.Tx, roles []string) ([]string, error) {
	out := []string{
		"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM PUBLIC",
		"REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM PUBLIC",
		"REVOKE ALL ON ALL FUNCTIONS IN SCHEMA public FROM PUBLIC",
	}
	rows, err := tx.Query(ctx, `
		SELECT format('REVOKE %I FROM %I', g.rolname, m.rolname)
		  FROM pg_auth_members a JOIN pg_roles m ON m.oid = a.member JOIN pg_roles g ON g.oid = a.roleid
		 WHERE m.rolname = ANY($1)
		 ORDER BY 1`, roles)
	if err != nil {
		return nil, fmt.Errorf("role memberships: %w", err)
	}
	members, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("role memberships: %w", err)
	}
	out = append(out, members...)
	rows, err = tx.Query(ctx, `
		SELECT format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', p.oid::regprocedure)
		  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		 WHERE p.prosecdef AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'public')
		   AND n.nspname NOT LIKE 'pg\_%' AND p.proowner = (SELECT oid FROM pg_roles WHERE rolname = current_user)
		   AND has_function_privilege('public', p.oid, 'EXECUTE')
		 ORDER BY 1`)
	if err != nil {
		return nil, fmt.Errorf("SECURITY DEFINER functions: %w", err)
	}
	definers, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("SECURITY DEFINER functions: %w", err)
	}
	out = append(out, definers...)
	attrs, err := roleAttributeStatements(ctx, tx, roles)
	if err != nil {
		return nil, err
	}
	out = append(out, attrs...)
	for _, role := range roles {
		r := pgx.Identifier{role}.Sanitize()
		rows, err := tx.Query(ctx, `
			SELECT format('REVOKE ALL ON FUNCTION %s FROM %s', p.oid::regprocedure, $2::text)
			  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
			 WHERE p.prosecdef AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'public')
			   AND n.nspname NOT LIKE 'pg\_%' AND p.proowner = (SELECT oid FROM pg_roles WHERE rolname = current_user)
			   AND has_function_privilege($1, p.oid, 'EXECUTE')
			 ORDER BY 1`, role, r)
		if err != nil {
			return nil, fmt.Errorf("SECURITY DEFINER functions of %s: %w", role, err)
		}
		more, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, fmt.Errorf("SECURITY DEFINER functions of %s: %w", role, err)
		}
		out = append(out, more...)
	}
	return out, nil
}

// widenedSettings are the role settings (ALTER ROLE … SET) that change
// what a process role's sessions may do or read: the schemas its unqualified
// names resolve in, a role to become at login, replication mode (triggers
// off, so the secret-guarding triggers would not fire) and libraries
// loaded into its sessions. Other settings (statement_timeout, work_mem…)
// are an operator's to tune and stay.
var widenedSettings = []string{"search_path", "role", "session_replication_role", "session_preload_libraries", "local_preload_libraries"}

// roleAttributeStatements undo what a team's migration may have done to a
// process role itself: the attributes that widen it (SUPERUSER, CREATEDB,
// CREATEROLE, REPLICATION, BYPASSRLS: a process role has none of them) and
// widenedSettings set for it, server-wide or in this database. Only what is
// set is altered (role attributes are shared by every database of the
// server, and clearing SUPERUSER needs one).
func roleAttributeStatements(ctx context.Context, tx pgx.Tx, roles []string) ([]string, error) {
	rows, err := tx.Query(ctx, `
		SELECT format('ALTER ROLE %I%s%s%s%s%s', rolname,
		              CASE WHEN rolsuper THEN ' NOSUPERUSER' ELSE '' END,
		              CASE WHEN rolcreatedb THEN ' NOCREATEDB' ELSE '' END,
		              CASE WHEN rolcreaterole THEN ' NOCREATEROLE' ELSE '' END,
		              CASE WHEN rolreplication THEN ' NOREPLICATION' ELSE '' END,
		              CASE WHEN rolbypassrls THEN ' NOBYPASSRLS' ELSE '' END)
		  FROM pg_roles
		 WHERE rolname = ANY($1) AND (rolsuper OR rolcreatedb OR rolcreaterole OR rolreplication OR rolbypassrls)
		UNION ALL
		SELECT format('ALTER ROLE %I%s RESET %s', r.rolname,
		              CASE WHEN s.setdatabase = 0 THEN '' ELSE format(' IN DATABASE %I', current_database()) END,
		              split_part(c.setting, '=', 1))
		  FROM pg_db_role_setting s JOIN pg_roles r ON r.oid = s.setrole, unnest(s.setconfig) AS c(setting)
		 WHERE r.rolname = ANY($1)
		   AND s.setdatabase IN (0, (SELECT oid FROM pg_database WHERE datname = current_database()))
		   AND lower(split_part(c.setting, '=', 1)) = ANY($2)
		 ORDER BY 1`, roles, widenedSettings)
	if err != nil {
		return nil, fmt.Errorf("process roles' attributes and settings: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("process roles' attributes and settings: %w", err)
	}
	return out, nil
}

// accessStatements grants CONNECT on the database and USAGE on schema
// public to role when it lacks them (PUBLIC usually holds both; a hardened
// server may have revoked them).
// checkExtra refuses extra grants on hookinbox's own tables (a team's
// migrations may not widen what a process role sees there), but for the
// columns of DomainColumns, or to a role hookinbox does not have.
func checkExtra(extra []Grant) error {
	for _, g := range extra {
		if !slices.Contains(Roles, g.Role) {
			return fmt.Errorf("grant on %s: unknown role %q", g.Table, g.Role)
		}
		if !slices.Contains([]string{"SELECT", "INSERT", "UPDATE", "DELETE"}, g.Privilege) {
			return fmt.Errorf("grant on %s: privilege %q is not SELECT, INSERT, UPDATE or DELETE", g.Table, g.Privilege)
		}
		for _, own := range Grants {
			if own.Table != g.Table {
				continue
			}
			lent := DomainColumns[g.Table]
			if len(g.Columns) == 0 || slices.ContainsFunc(g.Columns, func(c string) bool { return !slices.Contains(lent, c) }) {
				return fmt.Errorf("grant on %s: that is hookinbox's own table; a set's grants cover its own tables only (and of %s, the columns left to a domain: %s)",
					g.Table, g.Table, strings.Join(lent, ", "))
			}
			break
		}
	}
	return nil
}

func accessStatements(ctx context.Context, tx pgx.Tx, role string) ([]string, error) {
	var db string
	var connect, usage bool
	err := tx.QueryRow(ctx, `
		SELECT current_database(), has_database_privilege($1, current_database(), 'CONNECT'),
		       has_schema_privilege($1, 'public', 'USAGE')`, role).Scan(&db, &connect, &usage)
	if err != nil {
		return nil, fmt.Errorf("privileges of %s: %w", role, err)
	}
	var out []string
	r := pgx.Identifier{role}.Sanitize()
	if !connect {
		out = append(out, "GRANT CONNECT ON DATABASE "+pgx.Identifier{db}.Sanitize()+" TO "+r)
	}
	if !usage {
		out = append(out, "GRANT USAGE ON SCHEMA public TO "+r)
	}
	return out, nil
}

// grantStatement renders g, resolving Except from the catalog (cached in
// columns by table).
func grantStatement(ctx context.Context, tx pgx.Tx, g Grant, columns map[string][]string) (string, error) {
	switch g.Privilege {
	case "SELECT", "INSERT", "UPDATE", "DELETE":
	default:
		return "", fmt.Errorf("grant %s on %s: unknown privilege", g.Privilege, g.Table)
	}
	all, ok := columns[g.Table]
	if !ok {
		var err error
		if all, err = tableColumns(ctx, tx, g.Table); err != nil {
			return "", err
		}
		columns[g.Table] = all
	}
	list := g.Columns
	if len(g.Except) > 0 {
		list = nil
		for _, c := range all {
			if !slices.Contains(g.Except, c) {
				list = append(list, c)
			}
		}
	}
	for _, c := range append(slices.Clone(g.Columns), g.Except...) {
		if !slices.Contains(all, c) {
			return "", fmt.Errorf("grant %s on %s to %s: no column %s", g.Privilege, g.Table, g.Role, c)
		}
	}
	s := "GRANT " + g.Privilege
	if len(list) > 0 {
		quoted := make([]string, len(list))
		for i, c := range list {
			quoted[i] = pgx.Identifier{c}.Sanitize()
		}
		s += " (" + strings.Join(quoted, ", ") + ")"
	}
	return s + " ON " + pgx.Identifier{"public", g.Table}.Sanitize() + " TO " + pgx.Identifier{g.Role}.Sanitize(), nil
}

// tableColumns lists the columns of public.table, in order.
func tableColumns(ctx context.Context, db DB, table string) ([]string, error) {
	rows, err := db.Query(ctx, `
		SELECT a.attname FROM pg_attribute a
		 WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped
		 ORDER BY a.attnum`, pgx.Identifier{"public", table}.Sanitize())
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", table, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", table, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("table %s does not exist: run 'hookinbox migrate' first", table)
	}
	return out, nil
}

// retryConcurrent runs fn in a transaction, again (a few times) when it
// lost a race with another database of the same server changing the same
// roles: roles are server-wide, grants are per database.
func retryConcurrent(ctx context.Context, db TxBeginner, fn func(pgx.Tx) error) error {
	var err error
	for range 5 {
		if err = pgx.BeginFunc(ctx, db, fn); err == nil || !concurrentRoleChange(err) {
			return err
		}
	}
	return err
}

func concurrentRoleChange(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "23505", "42710", "40001", "40P01": // a role created at the same time, serialization, deadlock
		return true
	case "XX000":
		return strings.Contains(pgErr.Message, "tuple concurrently updated")
	}
	return false
}

// IsPermissionDenied reports a 42501 error: the connection's role lacks a
// privilege (see Grants).
func IsPermissionDenied(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42501"
}

// scramIterations is PostgreSQL's default (scram_iterations).
const scramIterations = 4096

func checkPassword(pw string) error {
	for _, r := range pw {
		if r < 0x20 || r > 0x7e {
			return errors.New("must be printable ASCII (SASLprep is the identity there)")
		}
	}
	return nil
}

// scramVerifier is PostgreSQL's SCRAM-SHA-256 verifier of password (what
// psql's \password sends): the server stores it as is and never sees the
// password. salt is random when nil.
func scramVerifier(password string, salt []byte) (string, error) {
	if salt == nil {
		salt = make([]byte, 16)
		if _, err := rand.Read(salt); err != nil {
			return "", err
		}
	}
	salted, err := pbkdf2.Key(sha256.New, password, salt, scramIterations, sha256.Size)
	if err != nil {
		return "", err
	}
	mac := func(key []byte, msg string) []byte {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(msg))
		return h.Sum(nil)
	}
	stored := sha256.Sum256(mac(salted, "Client Key"))
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", scramIterations, b64(salt), b64(stored[:]),
		b64(mac(salted, "Server Key"))), nil
}
