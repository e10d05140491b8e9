-- The database, the roles the services log in as, each owning its schema and nothing else, and
-- ingest_reader (deploy/staging/postgres-entrypoint lists them; deploy/local/stack's
-- ensure_pg_roles names each schema's owner too). Run as a superuser by
-- psql with SECRETS_DIR naming the folder of the pg-*-password files: by staging's Postgres
-- entrypoint on every start and by the local stack (deploy/local/stack) on every up. Idempotent.
SELECT 'CREATE DATABASE swarmdeck' WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'swarmdeck') \gexec
REVOKE ALL ON DATABASE swarmdeck FROM PUBLIC;
\connect swarmdeck
REVOKE ALL ON SCHEMA public FROM PUBLIC;
\set postgres_pw `cat "$SECRETS_DIR/pg-postgres-password"`
\set ingest_pw `cat "$SECRETS_DIR/pg-ingest-password"`
\set fanout_pw `cat "$SECRETS_DIR/pg-stream-fanout-password"`
\set control_pw `cat "$SECRETS_DIR/pg-control-api-password"`
\set approvals_pw `cat "$SECRETS_DIR/pg-approvals-password"`
\set health_pw `cat "$SECRETS_DIR/pg-health-monitor-password"`
\set notifier_pw `cat "$SECRETS_DIR/pg-notifier-password"`
\set terminal_pw `cat "$SECRETS_DIR/pg-terminal-broker-password"`
\set pipeline_pw `cat "$SECRETS_DIR/pg-pipeline-runner-password"`
SELECT format('CREATE ROLE %I NOLOGIN', r) FROM unnest(ARRAY['ingest', 'stream_fanout', 'control_api', 'approvals', 'health_monitor', 'notifier', 'terminal_broker', 'pipeline_runner', 'ingest_reader']) AS r
 WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) \gexec
ALTER ROLE postgres PASSWORD :'postgres_pw';
ALTER ROLE ingest LOGIN PASSWORD :'ingest_pw';
ALTER ROLE stream_fanout LOGIN PASSWORD :'fanout_pw';
ALTER ROLE control_api LOGIN PASSWORD :'control_pw';
ALTER ROLE approvals LOGIN PASSWORD :'approvals_pw';
ALTER ROLE health_monitor LOGIN PASSWORD :'health_pw';
ALTER ROLE notifier LOGIN PASSWORD :'notifier_pw';
ALTER ROLE terminal_broker LOGIN PASSWORD :'terminal_pw';
ALTER ROLE pipeline_runner LOGIN PASSWORD :'pipeline_pw';
GRANT CONNECT ON DATABASE swarmdeck TO ingest, stream_fanout, control_api, approvals, health_monitor, notifier, terminal_broker, pipeline_runner;
CREATE SCHEMA IF NOT EXISTS ingest AUTHORIZATION ingest;
CREATE SCHEMA IF NOT EXISTS fanout AUTHORIZATION stream_fanout;
CREATE SCHEMA IF NOT EXISTS control AUTHORIZATION control_api;
CREATE SCHEMA IF NOT EXISTS approvals AUTHORIZATION approvals;
CREATE SCHEMA IF NOT EXISTS health AUTHORIZATION health_monitor;
CREATE SCHEMA IF NOT EXISTS notifier AUTHORIZATION notifier;
CREATE SCHEMA IF NOT EXISTS terminal AUTHORIZATION terminal_broker;
CREATE SCHEMA IF NOT EXISTS pipeline AUTHORIZATION pipeline_runner;
GRANT USAGE ON SCHEMA ingest TO ingest_reader;
ALTER DEFAULT PRIVILEGES FOR ROLE ingest IN SCHEMA ingest GRANT SELECT ON TABLES TO ingest_reader;
GRANT SELECT ON ALL TABLES IN SCHEMA ingest TO ingest_reader;
GRANT ingest_reader TO stream_fanout, control_api, health_monitor;
