-- Runs once, when the compose stack's PostgreSQL data volume is first created
-- (docker-entrypoint-initdb.d, psql with ON_ERROR_STOP). One server:
--   hookinbox: the migrator, owner of the application database and its
--              schema (`hookinbox migrate` connects as it). No CREATEROLE:
--              on PostgreSQL 15 that is nearly a superuser, so the process
--              roles are created here, by the superuser, instead.
--   hookinbox_intake, hookinbox_worker, hookinbox_operator, hookinbox_console:
--              what the intake, the worker, the read-only operator CLI and
--              the operator console connect as; their privileges are
--              granted by `hookinbox migrate` (after every migration, from
--              internal/store/roles.go), never here.
--   hookinbox_payload_reader: the payload columns; the console's payload
--              pool logs in as it, and it may be GRANTed to an operator who
--              must read payloads.
--   temporal:  Temporal's persistence (database "temporal", created here) and
--              visibility ("temporal_visibility", created by auto-setup, hence
--              CREATEDB).
-- No default passwords: docker-compose.yml passes them from the environment
-- (it refuses to start without them). An unset one leaves its psql variable
-- unset, and the statement using it fails, which fails the initialization.
-- Production creates the same roles with `hookinbox db roles`
-- (docs/production.md).
\getenv hookinbox_password POSTGRES_HOOKINBOX_PASSWORD
\getenv intake_password HOOKINBOX_INTAKE_DB_PASSWORD
\getenv worker_password HOOKINBOX_WORKER_DB_PASSWORD
\getenv operator_password HOOKINBOX_OPERATOR_DB_PASSWORD
\getenv console_password HOOKINBOX_CONSOLE_DB_PASSWORD
\getenv payload_password HOOKINBOX_PAYLOAD_READER_DB_PASSWORD
\getenv temporal_password TEMPORAL_DB_PASSWORD

CREATE ROLE hookinbox LOGIN PASSWORD :'hookinbox_password';
CREATE DATABASE hookinbox OWNER hookinbox;

CREATE ROLE hookinbox_intake LOGIN PASSWORD :'intake_password';
CREATE ROLE hookinbox_worker LOGIN PASSWORD :'worker_password';
CREATE ROLE hookinbox_operator LOGIN PASSWORD :'operator_password';
CREATE ROLE hookinbox_console LOGIN PASSWORD :'console_password';
CREATE ROLE hookinbox_payload_reader LOGIN PASSWORD :'payload_password';

-- Only hookinbox's roles reach its database (not, say, temporal).
REVOKE CONNECT ON DATABASE hookinbox FROM PUBLIC;
GRANT CONNECT ON DATABASE hookinbox TO hookinbox_intake, hookinbox_worker, hookinbox_operator, hookinbox_console,
    hookinbox_payload_reader;

CREATE ROLE temporal LOGIN CREATEDB PASSWORD :'temporal_password';
CREATE DATABASE temporal OWNER temporal;
