-- Runs once, when the compose stack's PostgreSQL data volume is first created
-- (docker-entrypoint-initdb.d). One server, two owners:
--   hookinbox: the application database (migrated by `hookinbox migrate`);
--   temporal:  Temporal's persistence (database "temporal", created here) and
--              visibility ("temporal_visibility", created by auto-setup, hence
--              CREATEDB).
-- The passwords are for a local stack only; production points DATABASE_URL
-- at its own PostgreSQL (docs/production.md).
CREATE ROLE hookinbox LOGIN PASSWORD 'hookinbox';
CREATE DATABASE hookinbox OWNER hookinbox;

CREATE ROLE temporal LOGIN CREATEDB PASSWORD 'temporal';
CREATE DATABASE temporal OWNER temporal;
