#!/usr/bin/env bash
# compose-check.sh: validate the Docker deployment files without a Docker engine.
#
#   1. docker-compose.yml is a valid compose file (`docker-compose config -q`,
#      Debian's docker-compose package, installed here when missing and root),
#      and refuses to run without its required variables (the database
#      passwords: no defaults); a local .env is ignored here.
#   2. It stays consistent with the binary: every HOOKINBOX_*, TEMPORAL_* and
#      DATABASE_URL variable given to a hookinbox service (and every HOOKINBOX_*
#      name anywhere in the file) is read by internal/config/config.go, and each
#      service's command is a hookinbox command. Images are pinned, bind-mounted
#      files exist, the start-up order holds (migrate after PostgreSQL is
#      healthy; intake and worker after migrate completed). Only migrate gets
#      the owner's DATABASE_URL; the intake, the worker and the operator CLI
#      connect as their own roles, each password a required variable; and the
#      intake's internal listener (/metrics, /readyz) is scraped but never
#      published. No default credentials: every password a service gets is a
#      required variable (no literal, no ${VAR:-default}), initdb has no
#      literal PASSWORD; Grafana is not anonymous; Prometheus runs without
#      --web.enable-lifecycle / --web.enable-admin-api.
#   3. deploy/: Prometheus config and alert rules, Grafana provisioning and the
#      dashboard JSON, Temporal dynamic config parse and hang together. The
#      alert rules have one source, the Helm chart's
#      deploy/helm/hookinbox/files/alerts.yml (its PrometheusRule reads it):
#      compose's Prometheus mounts that file beside its prometheus.yml, and no
#      copy lives in deploy/prometheus.
#   4. Alertmanager (deploy/alertmanager/alertmanager.yml): `amtool
#      check-config`, and `amtool config routes test` for every severity the
#      alert rules use (page to the on-call receiver, ticket and warning to
#      the team's), each receiver mailing through Mailpit; Prometheus sends
#      its alerts there. amtool is built from the pinned tools module
#      tools/amtool into .tools/ (make tools does it ahead), the version of
#      the compose file's prom/alertmanager image.
#   4b. Traces: one pinned Jaeger service takes OTLP/HTTP on 4318 (UI on
#      loopback); the intake and the worker export to it
#      (OTEL_EXPORTER_OTLP_ENDPOINT) under distinct OTEL_SERVICE_NAMEs, and
#      HOOKINBOX_TRACE_URL links its UI.
#   5. With promtool (on PATH, or taken from Debian's prometheus package into
#      .tools/ when root): `promtool check config` on /etc/prometheus as the
#      compose file mounts it, the alert unit tests
#      (deploy/helm/hookinbox/files/alerts_test.yml), and every dashboard
#      query parsed.
#
# No Docker engine runs here or in CI, so nothing is started.
# Without root and without docker-compose: prints why and exits 0, except
# under CI=true, where a check that cannot run is a failure.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
COMPOSE_FILE_PATH=docker-compose.yml
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

say() { echo "compose-check: $*"; }
die() { echo "compose-check: FAIL: $*" >&2; exit 1; }
is_root() { [ "$(id -u)" -eq 0 ]; }
in_ci() { [ "${CI:-}" = "true" ]; }

# cannot_run REASON: a check's tool is missing and cannot be installed.
cannot_run() {
	if in_ci; then
		die "$1 (CI=true: a check that cannot run fails)"
	fi
	say "SKIP: $1"
	exit 0
}

APT_UPDATED=0
# apt_retry CMD...: run an apt-get command; on failure refresh the package
# lists once (a fresh machine may have none) and try again.
apt_retry() {
	if DEBIAN_FRONTEND=noninteractive "$@" >"$TMP/apt.log" 2>&1; then
		return 0
	fi
	if [ "$APT_UPDATED" -eq 0 ]; then
		APT_UPDATED=1
		say "refreshing apt package lists"
		apt-get update -qq >>"$TMP/apt.log" 2>&1 || true
		DEBIAN_FRONTEND=noninteractive "$@" >>"$TMP/apt.log" 2>&1 && return 0
	fi
	tail -n 5 "$TMP/apt.log" >&2
	return 1
}

[ -f "$COMPOSE_FILE_PATH" ] || die "$COMPOSE_FILE_PATH not found in $ROOT"
[ -f internal/config/config.go ] || die "internal/config/config.go not found"

# --- 1. docker-compose ------------------------------------------------------
if ! command -v docker-compose >/dev/null 2>&1; then
	if ! is_root; then
		cannot_run "docker-compose is not installed and installing it needs root (apt-get install docker-compose)"
	fi
	command -v apt-get >/dev/null 2>&1 || cannot_run "docker-compose is not installed and there is no apt-get"
	say "installing Debian's docker-compose package"
	apt_retry apt-get install -y -qq --no-install-recommends docker-compose ||
		die "apt-get install docker-compose failed"
fi

# Interpolation must not pick up the caller's compose settings, nor a local
# .env (its passwords): an empty env file stands in for it.
unset COMPOSE_FILE COMPOSE_PROFILES COMPOSE_PROJECT_NAME
: >"$TMP/empty.env"
compose() { docker-compose --env-file "$TMP/empty.env" -f "$COMPOSE_FILE_PATH" "$@"; }
# The passwords have no defaults (${VAR:?…}): compose must refuse to run
# without them; the checks below then run with placeholders.
REQUIRED=$(grep -oE '\$\{[A-Z_][A-Z0-9_]*:\?' "$COMPOSE_FILE_PATH" | sed -E 's/^\$\{//; s/:\?$//' | sort -u)
[ -n "$REQUIRED" ] || die "$COMPOSE_FILE_PATH: no required (\${VAR:?…}) variables: the database passwords must have no defaults"
unset_args=()
for v in $REQUIRED; do unset_args+=(-u "$v"); done
if env "${unset_args[@]}" docker-compose --env-file "$TMP/empty.env" -f "$COMPOSE_FILE_PATH" config -q >/dev/null 2>&1; then
	die "docker-compose config accepted $COMPOSE_FILE_PATH without $(echo $REQUIRED | tr ' ' ',') set"
fi
for v in $REQUIRED; do export "$v=compose-check-placeholder"; done
say "required variables (no defaults): $(echo $REQUIRED)"
if ! compose config -q 2>"$TMP/config.err"; then
	cat "$TMP/config.err" >&2
	die "docker-compose config rejected $COMPOSE_FILE_PATH"
fi
if [ -s "$TMP/config.err" ]; then
	# Warnings (an unset variable, an unknown key) count as failures.
	cat "$TMP/config.err" >&2
	die "docker-compose config warned about $COMPOSE_FILE_PATH"
fi
say "docker-compose config: $COMPOSE_FILE_PATH is valid"

# --- 2 and 3. consistency and deploy/ files (python3 with PyYAML) -----------
PY=""
for p in python3 /usr/bin/python3; do
	if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import yaml' 2>/dev/null; then
		PY=$p
		break
	fi
done
if [ -z "$PY" ]; then
	if is_root && command -v apt-get >/dev/null 2>&1; then
		apt_retry apt-get install -y -qq --no-install-recommends python3-yaml || die "apt-get install python3-yaml failed"
		/usr/bin/python3 -c 'import yaml' 2>/dev/null && PY=/usr/bin/python3
	fi
	[ -n "$PY" ] || cannot_run "python3 with PyYAML is not available"
fi

"$PY" - "$TMP/dashboard-rules.yml" "$TMP/severities" "$TMP/prometheus-mounts" <<'PYEOF'
import json, os, re, sys, glob
import yaml

rules_out, severities_out, prom_mounts_out = sys.argv[1], sys.argv[2], sys.argv[3]
# The alert rules' one source: the Helm chart's file (its PrometheusRule
# reads it with .Files.Get); compose's Prometheus mounts it.
ALERTS = "deploy/helm/hookinbox/files/alerts.yml"
ALERTS_TEST = "deploy/helm/hookinbox/files/alerts_test.yml"
errors, notes = [], []
def fail(msg): errors.append(msg)

def load_yaml(path):
    try:
        with open(path) as f:
            return yaml.safe_load(f)
    except Exception as e:  # noqa: BLE001 (report any parse error)
        fail(f"{path}: not valid YAML: {e}")
        return None

# Variables the binary reads: every quoted upper-case name in config.go.
config_src = open("internal/config/config.go").read()
config_vars = set(re.findall(r'"([A-Z][A-Z0-9_]*[A-Z0-9])"', config_src))

def var_ok(name):
    return name in config_vars

# Commands of the service binary: every cobra Use of its command tree,
# internal/command (cmd/hookinbox is its thin main; the lab binary's
# simulate, soak, bench and demo are not, so no service may run them).
commands = set()
for path in glob.glob("cmd/hookinbox/*.go") + glob.glob("internal/command/*.go"):
    if path.endswith("_test.go"):
        continue
    for use in re.findall(r'Use:\s*"([^"]+)"', open(path).read()):
        commands.add(use.split()[0])

# --- docker-compose.yml ---
compose_path = "docker-compose.yml"
compose_raw = open(compose_path).read()
compose = load_yaml(compose_path) or {}
services = compose.get("services") or {}
if not services:
    fail(f"{compose_path}: no services")

env_re = re.compile(r"^(HOOKINBOX_[A-Z0-9_]+|TEMPORAL_[A-Z0-9_]+|DATABASE_URL)$")
def env_map(env):
    if isinstance(env, dict):
        return env
    out = {}
    for item in env or []:
        k, _, v = str(item).partition("=")
        out[k] = v
    return out

hookinbox_services = {n: s for n, s in services.items() if isinstance(s, dict) and "build" in s}
process_db = {"webhook": ("HOOKINBOX_INTAKE_DATABASE_URL", "hookinbox_intake"),
              "worker": ("HOOKINBOX_WORKER_DATABASE_URL", "hookinbox_worker"),
              "operator": ("HOOKINBOX_OPERATOR_DATABASE_URL", "hookinbox_operator"),
              "console": ("HOOKINBOX_CONSOLE_DATABASE_URL", "hookinbox_console")}
no_db = {"secrets-key"}
for want in ("migrate", "webhook", "worker", "console"):
    if want not in hookinbox_services:
        fail(f"{compose_path}: service {want} must be built from the Dockerfile")

for name, svc in hookinbox_services.items():
    env = env_map(svc.get("environment"))
    for var in sorted(env):
        if env_re.match(var) and not var_ok(var):
            fail(f"{compose_path}: service {name} sets {var}, which internal/config/config.go does not read")
    # Each process connects as its own role (internal/store/roles.go), never
    # with the schema owner's DATABASE_URL; the migration (and the owner's
    # commands) use DATABASE_URL. The secrets-key service only writes the
    # key file: it gets no database URL at all.
    if name in no_db:
        for var in ["DATABASE_URL"] + [v for v, _ in process_db.values()]:
            if var in env:
                fail(f"{compose_path}: service {name} connects to no database and must not get {var}")
        want, role = None, None
    else:
        want, role = process_db.get(name, ("DATABASE_URL", None))
    if want is None:
        pass
    elif want not in env:
        fail(f"{compose_path}: service {name} has no {want}")
    elif role and not re.match(rf"postgres(ql)?://{role}[:@]", str(env[want])):
        fail(f"{compose_path}: service {name} must connect as {role} ({want})")
    if want in env and not re.match(r"postgres(ql)?://[^:@/]+:\$\{[A-Z0-9_]+:\?", str(env[want])):
        fail(f"{compose_path}: service {name}: the password in {want} must be a required variable (${{VAR:?…}}), never a default")
    if role and "DATABASE_URL" in env:
        fail(f"{compose_path}: service {name} must not get the owner's DATABASE_URL (it connects as {role})")
    cmd = svc.get("command")
    if isinstance(cmd, str):
        cmd = cmd.split()
    if not cmd:
        fail(f"{compose_path}: service {name} has no command (webhook, worker, migrate…)")
    elif cmd[0] not in commands:
        fail(f"{compose_path}: service {name} runs 'hookinbox {cmd[0]}', which is not a command of cmd/hookinbox")

for var in sorted(set(re.findall(r"\bHOOKINBOX_[A-Z0-9_]*[A-Z0-9]\b", compose_raw))):
    if not var_ok(var):
        fail(f"{compose_path}: names {var}, which internal/config/config.go does not read")

for need in ("webhook", "worker"):
    env = env_map((hookinbox_services.get(need) or {}).get("environment"))
    if need == "worker" and env.get("HOOKINBOX_SMTP_ADDR") != "mailpit:1025":
        fail(f"{compose_path}: worker must send mail to mailpit:1025 (HOOKINBOX_SMTP_ADDR)")
    if need == "worker" and str(env.get("HOOKINBOX_SMTP_TLS", "auto")) not in ("off", "starttls"):
        # The default (auto) requires STARTTLS of a relay on another host,
        # and Mailpit offers none: every confirmation would be refused.
        fail(f"{compose_path}: worker sends to mailpit, which offers no STARTTLS: set HOOKINBOX_SMTP_TLS to off")

# Traces: one Jaeger service (pinned jaegertracing/jaeger) takes OTLP/HTTP
# on 4318 and serves its UI on the host's loopback; the intake and the worker
# export to it, each under its own OTEL_SERVICE_NAME, with the variables
# internal/config reads (and the console links traces with
# HOOKINBOX_TRACE_URL, a template naming {trace_id}).
jaeger = {n: s for n, s in services.items()
          if str((s or {}).get("image", "")).split("@")[0].rsplit(":", 1)[0] == "jaegertracing/jaeger"}
if len(jaeger) != 1:
    fail(f"{compose_path}: want one Jaeger service (image jaegertracing/jaeger), found {sorted(jaeger)}")
else:
    jname, jsvc = next(iter(jaeger.items()))
    jports = [str(p if isinstance(p, str) else f"{p.get('host_ip', '')}:{p.get('published', '')}:{p.get('target', '')}")
              for p in jsvc.get("ports") or []]
    if "4318" not in [str(p) for p in jsvc.get("expose") or []] and not any(p.endswith(":4318") for p in jports):
        fail(f"{compose_path}: {jname} must offer OTLP/HTTP on 4318 to the compose network")
    if not any(p.startswith("127.0.0.1:") and p.endswith(":16686") for p in jports):
        fail(f"{compose_path}: {jname} must publish its UI (16686) on 127.0.0.1")
    for p in jports:
        if not p.startswith("127.0.0.1:"):
            fail(f"{compose_path}: {jname} publishes {p} beyond loopback")
    otlp_url = re.compile(rf"^https?://{re.escape(jname)}:4318/?$")
    names = {}
    for need in ("webhook", "worker"):
        env = env_map((hookinbox_services.get(need) or {}).get("environment"))
        base, signal = str(env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "")), str(env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", ""))
        if not (otlp_url.match(base) or re.match(rf"^https?://{re.escape(jname)}:4318/v1/traces$", signal)):
            fail(f"{compose_path}: {need} must export traces to {jname}:4318 (OTEL_EXPORTER_OTLP_ENDPOINT http://{jname}:4318)")
        name = str(env.get("OTEL_SERVICE_NAME", ""))
        if not name:
            fail(f"{compose_path}: {need} must name itself with OTEL_SERVICE_NAME")
        names[need] = name
        for var in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_SERVICE_NAME"):
            if not var_ok(var):
                fail(f"internal/config/config.go does not read {var}")
    if len(set(names.values())) != len(names):
        fail(f"{compose_path}: the intake and the worker need distinct OTEL_SERVICE_NAMEs, got {names}")
    for name, svc in hookinbox_services.items():
        tu = env_map(svc.get("environment")).get("HOOKINBOX_TRACE_URL")
        if tu is not None and ("{trace_id}" not in str(tu) or ":16686/" not in str(tu)):
            fail(f"{compose_path}: {name}'s HOOKINBOX_TRACE_URL must link Jaeger's UI with {{trace_id}}, got {tu!r}")

# The intake's internal listener (/metrics, /readyz) is reachable on the
# compose network and published nowhere; the public port is the only one.
we_svc = hookinbox_services.get("webhook") or {}
we_env = env_map(we_svc.get("environment"))
internal = str(we_env.get("HOOKINBOX_INTERNAL_ADDR", ""))
if not internal.startswith("0.0.0.0:"):
    fail(f"{compose_path}: webhook must set HOOKINBOX_INTERNAL_ADDR to 0.0.0.0:PORT (the default is the container's loopback, which Prometheus cannot reach)")
internal_port = internal.rpartition(":")[2]
for p in we_svc.get("ports") or []:
    spec = p if isinstance(p, str) else f"{p.get('published', '')}:{p.get('target', '')}"
    if spec.rpartition(":")[2].split("/")[0] == internal_port:
        fail(f"{compose_path}: webhook publishes its internal port {internal_port} ({spec}); /metrics and /readyz must stay off the host")
hc = " ".join(str(x) for x in ((we_svc.get("healthcheck") or {}).get("test") or []))
if "/readyz" in hc and f":{internal_port}/readyz" not in hc:
    fail(f"{compose_path}: webhook health check must call /readyz on the internal port {internal_port}")

# Workflow settings travel in workflow input: intake and worker must agree.
shared = ("HOOKINBOX_TASK_QUEUE", "TEMPORAL_NAMESPACE", "HOOKINBOX_IDLE_TIMEOUT", "HOOKINBOX_MAX_EVENTS_PER_RUN",
          "HOOKINBOX_RETRY_BUDGET", "HOOKINBOX_RETRY_INITIAL", "HOOKINBOX_RETRY_MAX", "HOOKINBOX_ACTIVITY_TIMEOUT",
          "HOOKINBOX_SWEEP_INTERVAL", "HOOKINBOX_SWEEP_AFTER",
          # The rest of app.WorkflowSettings' input.
          "HOOKINBOX_OUTBOX_BUDGET", "HOOKINBOX_HANDLE_MODE", "HOOKINBOX_OUTBOX_SEND", "HOOKINBOX_IDLE_COMPLETE_KINDS",
          "HOOKINBOX_WORKFLOW_ID_PREFIX",
          # Both open the secrets the other sealed.
          "HOOKINBOX_SECRETS_KEY", "HOOKINBOX_SECRETS_KEY_FILE")
we = env_map((hookinbox_services.get("webhook") or {}).get("environment"))
wo = env_map((hookinbox_services.get("worker") or {}).get("environment"))
for var in shared:
    if we.get(var) != wo.get(var):
        fail(f"{compose_path}: {var} differs between webhook ({we.get(var)!r}) and worker ({wo.get(var)!r})")

def depends(svc_name, on, condition):
    d = (services.get(svc_name) or {}).get("depends_on") or {}
    if isinstance(d, list) or (d.get(on) or {}).get("condition") != condition:
        fail(f"{compose_path}: {svc_name} must depend on {on} with condition {condition}")
depends("migrate", "postgres", "service_healthy")
depends("webhook", "migrate", "service_completed_successfully")
depends("worker", "migrate", "service_completed_successfully")

# The console (issue: least privilege for the console too): its own role,
# payloads on a pool of their own as the payload reader, the console
# command, its listener on the container's interfaces but published on the
# host's loopback only.
con_svc = hookinbox_services.get("console") or {}
con_env = env_map(con_svc.get("environment"))
con_cmd = con_svc.get("command")
if isinstance(con_cmd, str):
    con_cmd = con_cmd.split()
if not con_cmd or con_cmd[0] != "console":
    fail(f"{compose_path}: service console must run 'hookinbox console'")
payload_url = str(con_env.get("HOOKINBOX_PAYLOAD_DATABASE_URL", ""))
if not re.match(r"postgres(ql)?://hookinbox_payload_reader:\$\{[A-Z0-9_]+:\?", payload_url):
    fail(f"{compose_path}: service console must read payloads as hookinbox_payload_reader (HOOKINBOX_PAYLOAD_DATABASE_URL, its password a required variable)")
for name, svc in hookinbox_services.items():
    if name != "console" and "HOOKINBOX_PAYLOAD_DATABASE_URL" in env_map(svc.get("environment")):
        fail(f"{compose_path}: service {name} gets the payload reader's URL; only the console reads payloads")
con_addr = str(con_env.get("HOOKINBOX_CONSOLE_ADDR", ""))
if not con_addr.startswith("0.0.0.0:"):
    fail(f"{compose_path}: console must set HOOKINBOX_CONSOLE_ADDR to 0.0.0.0:PORT (the default is the container's loopback)")
for p in con_svc.get("ports") or []:
    spec = p if isinstance(p, str) else f"{p.get('host_ip', '')}:{p.get('published', '')}:{p.get('target', '')}"
    if not spec.startswith("127.0.0.1:"):
        fail(f"{compose_path}: console publishes {spec} beyond the host's loopback: the console and API are internal")
if str(con_env.get("HOOKINBOX_SECRETS_KEY_FILE", "")) != str(we_env.get("HOOKINBOX_SECRETS_KEY_FILE", "")):
    fail(f"{compose_path}: console must seal with the intake's key (HOOKINBOX_SECRETS_KEY_FILE)")
depends("console", "migrate", "service_completed_successfully")
pg_env = env_map((services.get("postgres") or {}).get("environment"))
for var in ("HOOKINBOX_CONSOLE_DB_PASSWORD", "HOOKINBOX_PAYLOAD_READER_DB_PASSWORD"):
    if var not in pg_env:
        fail(f"{compose_path}: postgres must pass {var} to deploy/postgres/initdb (the console's roles)")
initdb = "".join(open(p).read() for p in glob.glob("deploy/postgres/initdb/*.sql"))
for role in ("hookinbox_console", "hookinbox_payload_reader"):
    if not re.search(rf"CREATE ROLE {role} LOGIN PASSWORD", initdb):
        fail(f"deploy/postgres/initdb: must create {role} LOGIN with a password from the environment")


for name, svc in services.items():
    image = (svc or {}).get("image")
    if "build" in (svc or {}):
        continue
    if not image:
        fail(f"{compose_path}: service {name} has neither image nor build")
        continue
    ref = image.split("@")[0]
    tag = ref.rsplit(":", 1)[1] if ":" in ref.rsplit("/", 1)[-1] else ""
    if not tag or tag == "latest":
        fail(f"{compose_path}: service {name} image {image} is not pinned to a version tag")
    for vol in (svc or {}).get("volumes") or []:
        src = vol.split(":", 1)[0] if isinstance(vol, str) else (vol.get("source") if vol.get("type") == "bind" else None)
        if src and (src.startswith(".") or src.startswith("/")) and not os.path.exists(src):
            fail(f"{compose_path}: service {name} mounts {src}, which does not exist")

# --- No default credentials, no anonymous Grafana, no lifecycle API ---
# Every password (or other secret) a service is given is a required variable
# (${VAR:?…}): never a literal, never a ${VAR:-default}.
secret_re = re.compile(r"(PASSWORD|PASSWD|PWD|SECRET)$")
for name, svc in services.items():
    env = env_map((svc or {}).get("environment"))
    for var, val in sorted(env.items()):
        if not secret_re.search(var):
            continue
        val = str(val)
        if not val.strip():
            if not (var.endswith("_FILE") or var.startswith("HOOKINBOX_SECRETS_KEY")):
                fail(f"{compose_path}: service {name}: {var} is empty")
            continue
        if not re.fullmatch(r"\$\{[A-Z_][A-Z0-9_]*:\?[^}]*\}", val):
            fail(f"{compose_path}: service {name}: {var} must be a required variable (${{VAR:?set it}}), not {val!r}")
    for var, val in env.items():
        m = re.search(r"://[^:/@\s]+:([^@\s]+)@", str(val))
        if m and not m.group(1).startswith("${") :
            fail(f"{compose_path}: service {name}: {var} has a literal password in its URL")
for m in re.finditer(r"\$\{([A-Z_][A-Z0-9_]*)(:?-)[^}]*\}", compose_raw):
    if secret_re.search(m.group(1)):
        fail(f"{compose_path}: {m.group(1)} has a default ({m.group(0)}); passwords must be required")
graf = None
for name, svc in services.items():
    if str((svc or {}).get("image", "")).split(":")[0].endswith("grafana/grafana"):
        graf = (name, env_map(svc.get("environment")))
if graf is None:
    fail(f"{compose_path}: no grafana service")
else:
    gname, genv = graf
    if str(genv.get("GF_AUTH_ANONYMOUS_ENABLED", "")).lower() != "false":
        fail(f"{compose_path}: {gname} must set GF_AUTH_ANONYMOUS_ENABLED: \"false\" (no anonymous access)")
    if "GF_SECURITY_ADMIN_PASSWORD" not in genv:
        fail(f"{compose_path}: {gname} must set GF_SECURITY_ADMIN_PASSWORD from a required variable (the image's default is admin)")
    if str(genv.get("GF_AUTH_DISABLE_LOGIN_FORM", "")).lower() == "true" or str(genv.get("GF_AUTH_PROXY_ENABLED", "")).lower() == "true":
        fail(f"{compose_path}: {gname} must keep its login (no disabled login form, no auth proxy)")
for name, svc in services.items():
    cmd = (svc or {}).get("command")
    words = cmd.split() if isinstance(cmd, str) else [str(c) for c in (cmd or [])]
    if any(w.startswith("--web.enable-lifecycle") or w.startswith("--web.enable-admin-api") for w in words):
        fail(f"{compose_path}: service {name} enables Prometheus' unauthenticated lifecycle/admin API ({' '.join(words)})")
for path in glob.glob("deploy/postgres/initdb/*.sql"):
    for m in re.finditer(r"PASSWORD\s+'[^']*'", re.sub(r"--.*", "", open(path).read()), re.I):
        fail(f"{path}: literal password ({m.group(0)}); take it from the environment (\\getenv)")

# --- Dockerfile: pinned bases, the one binary as entry point ---
if os.path.exists("Dockerfile"):
    df = open("Dockerfile").read()
    args = dict(re.findall(r"^ARG\s+([A-Za-z_][A-Za-z0-9_]*)=(\S+)", df, re.M))
    for base in re.findall(r"^FROM\s+(\S+)", df, re.M):
        base = re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), ""), base)
        ref = base.split("@")[0]
        tag = ref.rsplit(":", 1)[1] if ":" in ref.rsplit("/", 1)[-1] else ""
        if not tag or tag == "latest" or tag.startswith("-"):
            fail(f"Dockerfile: base image {base} is not pinned to a version tag")
    if "./cmd/hookinbox" not in df or not re.search(r'^ENTRYPOINT\s+\["hookinbox"\]', df, re.M):
        fail("Dockerfile: must build ./cmd/hookinbox and use hookinbox as the entry point")
    if "hookinbox-lab" in re.sub(r"#.*", "", df):
        fail("Dockerfile: ships only the service binary; hookinbox-lab (simulate, soak, bench, demo) stays out of the image")
else:
    fail("Dockerfile not found")

# --- Prometheus ---
prom = load_yaml("deploy/prometheus/prometheus.yml") or {}
targets = {t for sc in prom.get("scrape_configs") or [] for s in sc.get("static_configs") or [] for t in s.get("targets") or []}
for t in ("webhook:9090", "worker:9091"):
    if t not in targets:
        fail(f"deploy/prometheus/prometheus.yml: does not scrape {t}")
if "webhook:8080" in targets:
    fail("deploy/prometheus/prometheus.yml: scrapes the intake's public port; /metrics is on its internal listener (webhook:9090)")
# What the prometheus service sees in /etc/prometheus: its bind mounts.
prom_svcs = {n: s for n, s in services.items()
             if str((s or {}).get("image", "")).split("@")[0].rsplit(":", 1)[0].endswith("prom/prometheus")}
prom_mounts = {}  # container path: host path
if len(prom_svcs) != 1:
    fail(f"{compose_path}: want one Prometheus service (image prom/prometheus), found {sorted(prom_svcs)}")
else:
    prom_name, prom_svc = next(iter(prom_svcs.items()))
    for v in prom_svc.get("volumes") or []:
        src, _, rest = (v if isinstance(v, str) else f"{v.get('source')}:{v.get('target')}").partition(":")
        target = rest.split(":")[0]
        if src.startswith("./"):
            prom_mounts[target] = os.path.normpath(src)
    if prom_mounts.get("/etc/prometheus/prometheus.yml") != "deploy/prometheus/prometheus.yml":
        fail(f"{compose_path}: {prom_name} must mount ./deploy/prometheus/prometheus.yml at /etc/prometheus/prometheus.yml")
    def host_path(container_path):
        for target, src in prom_mounts.items():
            if container_path == target:
                return src
            if container_path.startswith(target.rstrip("/") + "/"):
                return os.path.join(src, container_path[len(target.rstrip("/")) + 1:])
        return None
    for rf in prom.get("rule_files") or []:
        hp = host_path(os.path.join("/etc/prometheus", rf))
        if hp is None or not os.path.isfile(hp):
            fail(f"deploy/prometheus/prometheus.yml: rule file {rf} is not mounted into {prom_name} from a file of the repository")
        elif os.path.basename(rf) == "alerts.yml" and hp != ALERTS:
            fail(f"{compose_path}: {prom_name} loads alerts.yml from {hp}; the alert rules' one source is {ALERTS}")
    if "alerts.yml" not in (prom.get("rule_files") or []):
        fail("deploy/prometheus/prometheus.yml: must load alerts.yml")
for copy in glob.glob("deploy/prometheus/*.yml"):
    if copy != "deploy/prometheus/prometheus.yml":
        fail(f"{copy}: deploy/prometheus holds only prometheus.yml; the alert rules (and their tests) live in deploy/helm/hookinbox/files, one source")
with open(prom_mounts_out, "w") as f:
    for target, src in sorted(prom_mounts.items()):
        f.write(f"{src} {target}\n")

alerts = load_yaml(ALERTS) or {}
alert_names, alert_exprs = set(), []
for g in alerts.get("groups") or []:
    for r in g.get("rules") or []:
        if not r.get("alert") or not r.get("expr"):
            fail(f"{ALERTS}: group {g.get('name')}: a rule lacks alert or expr")
            continue
        if r["alert"] in alert_names:
            fail(f"{ALERTS}: duplicate alert {r['alert']}")
        alert_names.add(r["alert"])
        alert_exprs.append(r["expr"])
if not alert_names:
    fail(f"{ALERTS}: no alert rules")
load_yaml(ALERTS_TEST)

# --- Alertmanager: one service, the pinned amtool's version, loopback only;
# Prometheus sends to it; every receiver mails through Mailpit, resolutions
# too; every severity of the rules has its route (amtool tests each below).
am_path = "deploy/alertmanager/alertmanager.yml"
routed_severities = ("page", "ticket", "warning")
am_svcs = {n: s for n, s in services.items()
           if str((s or {}).get("image", "")).split("@")[0].rsplit(":", 1)[0].endswith("prom/alertmanager")}
if len(am_svcs) != 1:
    fail(f"{compose_path}: want one Alertmanager service (image prom/alertmanager), found {sorted(am_svcs)}")
else:
    am_name, am_svc = next(iter(am_svcs.items()))
    words = am_svc.get("command") or []
    words = words.split() if isinstance(words, str) else [str(w) for w in words]
    if "--config.file=/etc/alertmanager/alertmanager.yml" not in words:
        fail(f"{compose_path}: {am_name} must run with --config.file=/etc/alertmanager/alertmanager.yml")
    mounts = [v if isinstance(v, str) else f"{v.get('source')}:{v.get('target')}" for v in am_svc.get("volumes") or []]
    if not any(m.split(":")[:2] == ["./deploy/alertmanager", "/etc/alertmanager"] for m in mounts):
        fail(f"{compose_path}: {am_name} must mount ./deploy/alertmanager at /etc/alertmanager")
    for p in am_svc.get("ports") or []:
        spec = p if isinstance(p, str) else f"{p.get('host_ip', '')}:{p.get('published', '')}:{p.get('target', '')}"
        if not spec.startswith("127.0.0.1:"):
            fail(f"{compose_path}: {am_name} publishes {spec} beyond the host's loopback: Alertmanager has no authentication")
    tag = str(am_svc.get("image")).split("@")[0].rsplit(":", 1)[-1]
    m = re.search(r"^require\s+github\.com/prometheus/alertmanager\s+(v\S+)", open("tools/amtool/go.mod").read(), re.M)
    if not m:
        fail("tools/amtool/go.mod: does not pin github.com/prometheus/alertmanager")
    elif m.group(1) != tag:
        fail(f"{compose_path}: {am_name} runs prom/alertmanager:{tag} but amtool is pinned at {m.group(1)} (tools/amtool/go.mod): keep them the same")
    am_targets = {t for am in (prom.get("alerting") or {}).get("alertmanagers") or []
                  for sc in am.get("static_configs") or [] for t in sc.get("targets") or []}
    if f"{am_name}:9093" not in am_targets:
        fail(f"deploy/prometheus/prometheus.yml: alerting must send to {am_name}:9093 (has {sorted(am_targets)})")
    if (services.get("mailpit") or {}) == {}:
        fail(f"{compose_path}: no mailpit service for Alertmanager's mail")
amc = load_yaml(am_path) or {}
smarthost = (amc.get("global") or {}).get("smtp_smarthost")
receivers = amc.get("receivers") or []
if not receivers:
    fail(f"{am_path}: no receivers")
for r in receivers:
    mails = r.get("email_configs") or []
    if not mails:
        fail(f"{am_path}: receiver {r.get('name')} sends no mail (the compose stack's alerts go to Mailpit)")
    for e in mails:
        if e.get("smarthost", smarthost) != "mailpit:1025":
            fail(f"{am_path}: receiver {r.get('name')} mails through {e.get('smarthost', smarthost)!r}, not mailpit:1025")
        if e.get("send_resolved") is not True:
            fail(f"{am_path}: receiver {r.get('name')} must send_resolved: true (the recovery notice)")
severities = set()
for g in alerts.get("groups") or []:
    for r in g.get("rules") or []:
        sev = (r.get("labels") or {}).get("severity")
        if sev not in routed_severities:
            fail(f"{ALERTS}: {r.get('alert')} has severity {sev!r}; Alertmanager routes {', '.join(routed_severities)}")
        else:
            severities.add(sev)
with open(severities_out, "w") as f:
    f.write("\n".join(sorted(severities)) + "\n")

# --- Grafana ---
ds = load_yaml("deploy/grafana/provisioning/datasources/prometheus.yml") or {}
ds_uids = {d.get("uid") for d in ds.get("datasources") or []}
prov = load_yaml("deploy/grafana/provisioning/dashboards/hookinbox.yml") or {}
if not prov.get("providers"):
    fail("deploy/grafana/provisioning/dashboards/hookinbox.yml: no providers")

dash_exprs = []
dash_files = sorted(glob.glob("deploy/grafana/dashboards/*.json"))
if not dash_files:
    fail("deploy/grafana/dashboards: no dashboard JSON")
titles = set()
for path in dash_files:
    try:
        dash = json.load(open(path))
    except Exception as e:  # noqa: BLE001
        fail(f"{path}: not valid JSON: {e}")
        continue
    titles.add(dash.get("title"))
    if not dash.get("uid"):
        fail(f"{path}: no uid")
    ids = set()
    def walk(panels):
        for p in panels or []:
            yield p
            yield from walk(p.get("panels"))
    for p in walk(dash.get("panels")):
        pid = p.get("id")
        if pid in ids:
            fail(f"{path}: duplicate panel id {pid}")
        ids.add(pid)
        if "gridPos" not in p:
            fail(f"{path}: panel {p.get('title')!r} has no gridPos")
        if p.get("type") == "row":
            continue
        if not p.get("targets"):
            fail(f"{path}: panel {p.get('title')!r} has no query")
        for t in p.get("targets") or []:
            uid = (t.get("datasource") or p.get("datasource") or {}).get("uid")
            if uid not in ds_uids:
                fail(f"{path}: panel {p.get('title')!r} uses datasource uid {uid!r}, not provisioned ({sorted(ds_uids)})")
            if not t.get("expr"):
                fail(f"{path}: panel {p.get('title')!r} has an empty query")
            else:
                dash_exprs.append((p.get("title"), t["expr"]))
if "hookinbox" not in titles:
    fail("deploy/grafana/dashboards: no dashboard titled 'hookinbox'")

# --- Temporal dynamic config ---
for path in glob.glob("deploy/temporal/dynamicconfig/*.yaml"):
    dc = load_yaml(path)
    if dc is not None and not isinstance(dc, dict):
        fail(f"{path}: must be a mapping of setting to values")

# Every dashboard query as a recording rule, so promtool parses the PromQL.
# Grafana's variables are replaced by values of the same kind.
def promql(expr):
    return expr.replace("$__rate_interval", "5m").replace("$__interval", "1m").replace("$endpoint", ".*")
with open(rules_out, "w") as f:
    yaml.safe_dump({"groups": [{"name": "dashboard-queries", "rules": [
        {"record": f"dashboard:query_{i}", "expr": promql(e)} for i, (_, e) in enumerate(dash_exprs)]}]}, f)
with open(rules_out + ".index", "w") as f:
    for i, (title, _) in enumerate(dash_exprs):
        f.write(f"  dashboard:query_{i}: panel {title!r}\n")

# hookinbox metrics the dashboard and alerts use that no Go code defines yet
# (a note: several arrive with later issues).
used = set(re.findall(r"\bhookinbox_[a-z0-9_]+", " ".join([e for _, e in dash_exprs] + alert_exprs)))
used = {re.sub(r"_(bucket|sum|count)$", "", m) for m in used}
go_src = ""
for path in glob.glob("**/*.go", recursive=True):
    if not path.startswith((".tools/", ".data/", "tools/")):
        go_src += open(path, errors="replace").read()
missing = sorted(m for m in used if f'"{m}"' not in go_src)
if missing:
    notes.append("metrics used by the dashboard or alerts but not defined in Go yet: " + ", ".join(missing))

for n in dict.fromkeys(notes):
    print(f"compose-check: note: {n}")
if errors:
    for e in errors:
        print(f"compose-check: FAIL: {e}", file=sys.stderr)
    sys.exit(1)
print(f"compose-check: consistency: {len(hookinbox_services)} hookinbox services, {len(services)} services, "
      f"{len(alert_names)} alerts, {len(dash_exprs)} dashboard queries")
PYEOF

# --- 4. amtool --------------------------------------------------------------
# Built from the pinned tools module, where devenv.Amtool (make tools) puts it.
AM_VERSION=$(awk '$1 == "require" && $2 == "github.com/prometheus/alertmanager" {print $3}' tools/amtool/go.mod)
[ -n "$AM_VERSION" ] || die "tools/amtool/go.mod does not pin github.com/prometheus/alertmanager"
AMTOOL=.tools/amtool-$AM_VERSION/amtool
if [ ! -x "$AMTOOL" ]; then
	command -v go >/dev/null 2>&1 || cannot_run "amtool is not built (.tools/) and there is no go to build it from tools/amtool"
	say "building amtool $AM_VERSION from tools/amtool into $(dirname "$AMTOOL") (once per machine, a few minutes)"
	mkdir -p "$(dirname "$AMTOOL")"
	if ! (cd tools/amtool && go build -o "$ROOT/$AMTOOL.$$.tmp" github.com/prometheus/alertmanager/cmd/amtool) >"$TMP/amtool-build.log" 2>&1; then
		tail -n 20 "$TMP/amtool-build.log" >&2
		die "building amtool from tools/amtool failed"
	fi
	mv "$AMTOOL.$$.tmp" "$AMTOOL"
fi
AM_CONFIG=deploy/alertmanager/alertmanager.yml
if ! "$AMTOOL" check-config "$AM_CONFIG" >"$TMP/amtool.log" 2>&1; then
	cat "$TMP/amtool.log" >&2
	die "amtool check-config $AM_CONFIG"
fi
# Who each severity of the alert rules reaches (docs/production.md).
for sev in $(cat "$TMP/severities"); do
	case "$sev" in
	page) want=hookinbox-oncall ;;
	*) want=hookinbox-team ;;
	esac
	if ! "$AMTOOL" config routes test --config.file="$AM_CONFIG" --verify.receivers="$want" severity="$sev" alertname=compose-check >"$TMP/amtool.log" 2>&1; then
		cat "$TMP/amtool.log" >&2
		die "$AM_CONFIG: an alert of severity $sev must reach receiver $want"
	fi
done
say "amtool: $AM_CONFIG is valid and routes severities $(echo $(cat "$TMP/severities")) as documented ($AM_VERSION)"

# --- 5. promtool ------------------------------------------------------------
PROMTOOL=""
if command -v promtool >/dev/null 2>&1; then
	PROMTOOL=$(command -v promtool)
elif [ -x .tools/promtool/promtool ]; then
	PROMTOOL=.tools/promtool/promtool
elif is_root && command -v apt-get >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1; then
	# Only promtool from Debian's prometheus package: downloaded, not installed
	# (no daemon), kept in .tools/ (gitignored) for the next run.
	say "fetching promtool from Debian's prometheus package into .tools/promtool (once)"
	if (cd "$TMP" && apt_retry apt-get download prometheus); then
		mkdir -p "$TMP/deb" .tools/promtool
		if dpkg-deb --fsys-tarfile "$TMP"/prometheus_*.deb | tar -x -C "$TMP/deb" ./usr/bin/promtool; then
			mv "$TMP/deb/usr/bin/promtool" .tools/promtool/promtool
			PROMTOOL=.tools/promtool/promtool
		fi
	fi
fi
if [ -z "$PROMTOOL" ]; then
	say "note: promtool unavailable: PromQL of the alerts and dashboard not checked"
	say "ok"
	exit 0
fi

run_promtool() {
	if ! "$PROMTOOL" "$@" >"$TMP/promtool.log" 2>&1; then
		cat "$TMP/promtool.log" >&2
		die "promtool $*"
	fi
}
# /etc/prometheus as the compose file mounts it: prometheus.yml and the
# chart's alerts.yml side by side, so the rule_files paths resolve as they
# do in the container.
PROM_ETC="$TMP/etc-prometheus"
while read -r src target; do
	case "$target" in
	/etc/prometheus/*) ;;
	*) continue ;;
	esac
	mkdir -p "$(dirname "$PROM_ETC/${target#/etc/prometheus/}")"
	cp -R "$src" "$PROM_ETC/${target#/etc/prometheus/}"
done <"$TMP/prometheus-mounts"
run_promtool check config "$PROM_ETC/prometheus.yml"
run_promtool test rules deploy/helm/hookinbox/files/alerts_test.yml
if ! "$PROMTOOL" check rules "$TMP/dashboard-rules.yml" >"$TMP/promtool.log" 2>&1; then
	cat "$TMP/promtool.log" >&2
	echo "compose-check: the dashboard's queries, by panel:" >&2
	cat "$TMP/dashboard-rules.yml.index" >&2
	die "a query of deploy/grafana/dashboards/*.json does not parse"
fi
say "promtool: prometheus.yml with the chart's alerts.yml as compose mounts them, the rules' unit tests, dashboard queries are valid ($("$PROMTOOL" --version 2>&1 | head -n1 | awk '{print $3}'))"
say "ok"
