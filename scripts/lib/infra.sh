# shellcheck shell=bash
# Ephemeral NATS (JetStream) + Postgres for tests, all on 127.0.0.1 and free
# ports, so several runs (and a developer's local stack) can coexist.
# Needs scripts/lib/common.sh sourced first.

# infra_start DIR: start both under DIR, wait until they answer, export the
# SWARMDECK_TEST_* variables the live tests read.
infra_start() {
  local dir=$1 nats_bin nats_port nats_mon pg_port
  nats_bin=$(nats_server_bin)
  nats_port=$(free_port) nats_mon=$(free_port) pg_port=$(free_port)
  # The postgres user must be able to reach DIR (mktemp -d makes it 0700).
  chmod 755 "$dir"

  # NATS: -a binds both the client and the monitoring port to loopback.
  "$nats_bin" -js -sd "$dir/nats" -a 127.0.0.1 -p "$nats_port" -m "$nats_mon" \
    -l "$dir/nats.log" </dev/null &
  echo $! >"$dir/nats.pid"

  # Postgres: a throwaway cluster; durability settings off because tests
  # never outlive it. Trust auth: loopback only and nothing to protect.
  mkdir -p "$dir/pg" "$dir/pg-sock"
  touch "$dir/pg.log"
  chown_pg "$dir/pg" "$dir/pg-sock" "$dir/pg.log"
  as_pg "$PG_BIN/initdb" -D "$dir/pg" -U postgres -A trust -E UTF8 --locale=C --no-sync >/dev/null
  cat >>"$dir/pg/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $pg_port
unix_socket_directories = '$dir/pg-sock'
# Every live test runs its services with pools of their own, many suites at once.
max_connections = 500
fsync = off
synchronous_commit = off
full_page_writes = off
CONF
  if ! as_pg "$PG_BIN/pg_ctl" start -w -t 60 -D "$dir/pg" -l "$dir/pg.log" >/dev/null; then
    tail -n 20 "$dir/pg.log" >&2
    die "postgres did not start (log: $dir/pg.log)"
  fi

  wait_for_http "http://127.0.0.1:$nats_mon/healthz" 30 "$(<"$dir/nats.pid")" ||
    { tail -n 20 "$dir/nats.log" >&2; die "nats-server did not start (log: $dir/nats.log)"; }
  local pg=(-h 127.0.0.1 -p "$pg_port" -U postgres)
  pg_isready -q -t 30 "${pg[@]}" || die "postgres is not accepting connections"
  psql -q -v ON_ERROR_STOP=1 "${pg[@]}" -d postgres \
    -c "CREATE ROLE swarmdeck LOGIN SUPERUSER PASSWORD 'swarmdeck'" \
    -c "CREATE DATABASE swarmdeck_test OWNER swarmdeck" >/dev/null

  export SWARMDECK_TEST_NATS_URL="nats://127.0.0.1:$nats_port"
  export SWARMDECK_TEST_NATS_MONITOR_URL="http://127.0.0.1:$nats_mon"
  export SWARMDECK_TEST_DATABASE_URL="postgres://swarmdeck:swarmdeck@127.0.0.1:$pg_port/swarmdeck_test"
  # Tests start (and kill) extra nats-servers of their own.
  export SWARMDECK_NATS_SERVER_BIN="$nats_bin"
  # ... and Postgres clusters of their own, to stop and restart.
  export SWARMDECK_PG_BIN="$PG_BIN"
  # Their stores live under DIR/tmp, so infra_stop can find and stop them even
  # when a crashing test process could not.
  mkdir -p "$dir/tmp"
  export TMPDIR="$dir/tmp"
  log "infra up: nats $SWARMDECK_TEST_NATS_URL, postgres 127.0.0.1:$pg_port ($dir)"
}

# infra_stop DIR: stop whatever infra_start got to start. Never fails, so it
# is safe in a trap after a partial start.
infra_stop() {
  local dir=$1 pid i
  # Servers the tests started themselves (nats stores and Postgres data under DIR/tmp).
  pkill -KILL -f -- "-sd $dir/tmp/" 2>/dev/null || true
  pkill -KILL -f -- "-D $dir/tmp/" 2>/dev/null || true
  if [[ -f $dir/pg/postmaster.pid ]]; then
    as_pg "$PG_BIN/pg_ctl" stop -m fast -w -D "$dir/pg" >/dev/null 2>&1 ||
      log "postgres stop failed (log: $dir/pg.log)"
  fi
  if [[ -s $dir/nats.pid ]]; then
    pid=$(<"$dir/nats.pid")
    kill "$pid" 2>/dev/null || true
    # Give it 5s to shut down cleanly, then insist.
    for ((i = 0; i < 50; i++)); do alive "$pid" || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  return 0
}
