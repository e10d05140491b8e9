-- Written by `swarmdeckd deploy write` from the registry of services; do not edit. The database,
-- the roles the services log in as, each owning its schema and nothing else, and ingest_reader. Run
-- as a superuser by psql with SECRETS_DIR naming the folder of the pg-*-password files: by
-- staging's Postgres entrypoint on every start and by the local stack on every up. Idempotent.
SELECT 'CREATE DATABASE swarmdeck' WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'swarmdeck') \gexec
REVOKE ALL ON DATABASE swarmdeck FROM PUBLIC;
\connect swarmdeck
REVOKE ALL ON SCHEMA public FROM PUBLIC;
\set postgres_pw `cat "$SECRETS_DIR/pg-postgres-password"`
\set ingest_pw `cat "$SECRETS_DIR/pg-ingest-password"`
\set stream_fanout_pw `cat "$SECRETS_DIR/pg-stream-fanout-password"`
\set control_api_pw `cat "$SECRETS_DIR/pg-control-api-password"`
\set approvals_pw `cat "$SECRETS_DIR/pg-approvals-password"`
\set health_monitor_pw `cat "$SECRETS_DIR/pg-health-monitor-password"`
\set notifier_pw `cat "$SECRETS_DIR/pg-notifier-password"`
\set terminal_broker_pw `cat "$SECRETS_DIR/pg-terminal-broker-password"`
\set pipeline_runner_pw `cat "$SECRETS_DIR/pg-pipeline-runner-password"`
SELECT format('CREATE ROLE %I NOLOGIN', r) FROM unnest(ARRAY['ingest', 'stream_fanout', 'control_api', 'approvals', 'health_monitor', 'notifier', 'terminal_broker', 'pipeline_runner', 'ingest_reader']) AS r
 WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) \gexec
ALTER ROLE postgres PASSWORD :'postgres_pw';
ALTER ROLE ingest LOGIN PASSWORD :'ingest_pw';
ALTER ROLE stream_fanout LOGIN PASSWORD :'stream_fanout_pw';
ALTER ROLE control_api LOGIN PASSWORD :'control_api_pw';
ALTER ROLE approvals LOGIN PASSWORD :'approvals_pw';
ALTER ROLE health_monitor LOGIN PASSWORD :'health_monitor_pw';
ALTER ROLE notifier LOGIN PASSWORD :'notifier_pw';
ALTER ROLE terminal_broker LOGIN PASSWORD :'terminal_broker_pw';
ALTER ROLE pipeline_runner LOGIN PASSWORD :'pipeline_runner_pw';
-- Each role's search_path and timeouts, for services behind a transaction pooler (postgres.role-settings);
-- connection parameters, which services send otherwise, win over them.
ALTER ROLE "ingest" SET search_path = "ingest";
ALTER ROLE "ingest" SET statement_timeout = '5000';
ALTER ROLE "ingest" SET lock_timeout = '5000';
ALTER ROLE "ingest" SET idle_in_transaction_session_timeout = '10000';
ALTER ROLE "stream_fanout" SET statement_timeout = '10000';
ALTER ROLE "control_api" SET search_path = "control";
ALTER ROLE "control_api" SET statement_timeout = '5000';
ALTER ROLE "control_api" SET lock_timeout = '5000';
ALTER ROLE "control_api" SET idle_in_transaction_session_timeout = '10000';
ALTER ROLE "approvals" SET search_path = "approvals";
ALTER ROLE "approvals" SET statement_timeout = '5000';
ALTER ROLE "approvals" SET lock_timeout = '5000';
ALTER ROLE "approvals" SET idle_in_transaction_session_timeout = '10000';
ALTER ROLE "health_monitor" SET search_path = "health";
ALTER ROLE "health_monitor" SET statement_timeout = '5000';
ALTER ROLE "health_monitor" SET lock_timeout = '5000';
ALTER ROLE "health_monitor" SET idle_in_transaction_session_timeout = '10000';
ALTER ROLE "notifier" SET search_path = "notifier";
ALTER ROLE "notifier" SET statement_timeout = '5000';
ALTER ROLE "notifier" SET lock_timeout = '5000';
ALTER ROLE "notifier" SET idle_in_transaction_session_timeout = '10000';
ALTER ROLE "terminal_broker" SET search_path = "terminal";
ALTER ROLE "terminal_broker" SET statement_timeout = '5000';
ALTER ROLE "terminal_broker" SET lock_timeout = '5000';
ALTER ROLE "terminal_broker" SET idle_in_transaction_session_timeout = '10000';
ALTER ROLE "pipeline_runner" SET search_path = "pipeline";
ALTER ROLE "pipeline_runner" SET statement_timeout = '5000';
ALTER ROLE "pipeline_runner" SET lock_timeout = '5000';
ALTER ROLE "pipeline_runner" SET idle_in_transaction_session_timeout = '10000';
GRANT CONNECT ON DATABASE swarmdeck TO ingest, stream_fanout, control_api, approvals, health_monitor, notifier, terminal_broker, pipeline_runner;
CREATE SCHEMA IF NOT EXISTS ingest AUTHORIZATION ingest;
CREATE SCHEMA IF NOT EXISTS fanout AUTHORIZATION stream_fanout;
CREATE SCHEMA IF NOT EXISTS control AUTHORIZATION control_api;
CREATE SCHEMA IF NOT EXISTS approvals AUTHORIZATION approvals;
CREATE SCHEMA IF NOT EXISTS health AUTHORIZATION health_monitor;
CREATE SCHEMA IF NOT EXISTS notifier AUTHORIZATION notifier;
CREATE SCHEMA IF NOT EXISTS terminal AUTHORIZATION terminal_broker;
CREATE SCHEMA IF NOT EXISTS pipeline AUTHORIZATION pipeline_runner;
-- The event log's readers: USAGE on its schema and SELECT on every table its owner makes there.
GRANT USAGE ON SCHEMA ingest TO ingest_reader;
ALTER DEFAULT PRIVILEGES FOR ROLE ingest IN SCHEMA ingest GRANT SELECT ON TABLES TO ingest_reader;
GRANT SELECT ON ALL TABLES IN SCHEMA ingest TO ingest_reader;
GRANT ingest_reader TO stream_fanout, control_api, health_monitor;
SELECT format('REVOKE ingest_reader FROM %I', u.rolname) FROM pg_auth_members m
 JOIN pg_roles g ON g.oid = m.roleid JOIN pg_roles u ON u.oid = m.member
 WHERE g.rolname = 'ingest_reader' AND u.rolname IN ('ingest', 'approvals', 'notifier', 'terminal_broker', 'pipeline_runner') \gexec
-- Each schema and what is in it belong to its service's role (a schema an older local stack made
-- under another owner is handed over; nothing changes where the owners are right already).
DO $$
DECLARE
    owners CONSTANT jsonb := '{"ingest": "ingest", "fanout": "stream_fanout", "control": "control_api", "approvals": "approvals", "health": "health_monitor", "notifier": "notifier", "terminal": "terminal_broker", "pipeline": "pipeline_runner"}';
    schema text;
    owner text;
    item record;
BEGIN
    FOR schema, owner IN SELECT key, value FROM jsonb_each_text(owners) LOOP
        EXECUTE format('ALTER SCHEMA %I OWNER TO %I', schema, owner);
        -- Tables first: their indexes and the sequences of their columns follow them.
        FOR item IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = schema AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND c.relowner <> owner::regrole
        LOOP
            EXECUTE format('ALTER TABLE %I.%I OWNER TO %I', schema, item.relname, owner);
        END LOOP;
        FOR item IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = schema AND c.relkind = 'S' AND c.relowner <> owner::regrole
                -- A column's sequence (serial, identity) goes with its table.
                AND NOT EXISTS (SELECT 1 FROM pg_depend d
                    WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i'))
        LOOP
            EXECUTE format('ALTER SEQUENCE %I.%I OWNER TO %I', schema, item.relname, owner);
        END LOOP;
        FOR item IN SELECT p.oid::regprocedure AS routine FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = schema AND p.proowner <> owner::regrole
        LOOP
            EXECUTE format('ALTER ROUTINE %s OWNER TO %I', item.routine, owner);
        END LOOP;
    END LOOP;
END
$$;
