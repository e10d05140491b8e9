# shellcheck shell=bash
# Helpers of deploy/staging's scripts: the Docker engine (started by hand when none runs, and
# stopped again), Debian's clients. Source after scripts/lib/common.sh.

# Debian's engine and clients, and the tools that make a base image without a registry. An
# engine installed otherwise (docker-ce) is used as it is: docker.io is only installed where no
# dockerd is.
staging_packages() {
  local packages=(docker-compose debootstrap openssl binutils python3-venv)
  command -v dockerd >/dev/null || packages+=(docker.io)
  [[ -x /usr/bin/docker ]] || packages+=(docker.io)
  ensure_packages "${packages[@]}"
}

# Debian's docker client (/usr/bin) drives BuildKit with nothing else installed; another
# client earlier on PATH (a docker-ce CLI without its buildx plugin) cannot. docker-compose 1.29
# runs `docker` from PATH too.
export PATH=/usr/bin:$PATH
export DOCKER_BUILDKIT=1

staging_state=${SWARMDECK_ROOT:-$PWD}/.build-staging
engine_pid_file=$staging_state/dockerd.pid

# The firewall as the engine could change it (nat and filter rules, forwarding), counters and
# comments left out so two snapshots compare equal when nothing changed.
firewall_snapshot() {
  {
    iptables-save 2>/dev/null || true
    ip6tables-save 2>/dev/null || true
    sysctl -n net.ipv4.ip_forward 2>/dev/null || true
  } | grep -v '^#' | sed -E 's/\[[0-9]+:[0-9]+\]//g'
}

# ensure_engine: use the engine that answers, or start dockerd (as root) and remember to stop
# it. Started here, it runs with its iptables, forwarding and masquerading off: the stack's
# containers talk over their bridge and the edge's published port is served by docker-proxy,
# so the machine's firewall is never touched (stop_engine checks that). Returns 3, having
# logged why, when no engine answers and none can be started here.
ensure_engine() {
  docker info >/dev/null 2>&1 && { log "using the Docker engine that is running"; return 0; }
  ((EUID == 0)) || { log "no Docker engine answers and only root can start one (sudo dockerd)"; return 3; }
  command -v dockerd >/dev/null || { log "dockerd is missing (apt-get install docker.io)"; return 3; }
  mkdir -p "$staging_state"
  firewall_snapshot >"$staging_state/firewall.before"
  log "starting dockerd (log: $staging_state/dockerd.log)"
  SWARMDECK_ENGINE_STARTED=1
  dockerd --iptables=false --ip6tables=false --ip-forward=false --ip-masq=false \
    --pidfile "$engine_pid_file" >"$staging_state/dockerd.log" 2>&1 &
  local pid=$! deadline=$((SECONDS + 60))
  until docker info >/dev/null 2>&1; do
    if ! alive "$pid" || ((SECONDS >= deadline)); then
      tail -n 20 "$staging_state/dockerd.log" >&2
      log "dockerd did not start (no privileges for it here?)"
      kill "$pid" 2>/dev/null || true
      SWARMDECK_ENGINE_STARTED=
      return 3
    fi
    sleep 0.2
  done
}

# engine_possible: succeed if an engine answers or this user could start one.
engine_possible() {
  docker info >/dev/null 2>&1 || ((EUID == 0))
}

# stop_engine: stop the dockerd ensure_engine started (nothing otherwise), remove the bridge it
# made, and check the firewall is as it was.
stop_engine() {
  [[ -n ${SWARMDECK_ENGINE_STARTED:-} ]] || return 0
  local pid
  pid=$(cat "$engine_pid_file" 2>/dev/null) || true
  if [[ -n $pid ]] && alive "$pid"; then
    log "stopping dockerd ($pid)"
    kill "$pid"
    local deadline=$((SECONDS + 30))
    while alive "$pid" && ((SECONDS < deadline)); do sleep 0.2; done
    alive "$pid" && { log "dockerd did not stop in 30 s; killing it"; kill -9 "$pid"; }
  fi
  ip link delete docker0 2>/dev/null || true
  if [[ -s $staging_state/firewall.before ]]; then
    if firewall_snapshot | cmp -s - "$staging_state/firewall.before"; then
      log "firewall and forwarding unchanged"
    else
      log "warning: the firewall differs from before the engine started:"
      firewall_snapshot | diff "$staging_state/firewall.before" - >&2 || true
      return 1
    fi
  fi
  SWARMDECK_ENGINE_STARTED=
}

# ensure_smoke_python: print a python with the smoke check's one dependency (websockets, from
# PyPI, pinned) in the project's venv (.build-venv, shared with schemathesis).
SWARMDECK_WEBSOCKETS_VERSION=15.0.1
ensure_smoke_python() {
  local venv=${SWARMDECK_ROOT:-$PWD}/.build-venv
  [[ -x $venv/bin/python ]] || python3 -m venv "$venv" || die "python3 -m venv failed (apt-get install python3-venv)"
  if [[ $("$venv/bin/python" -c 'import websockets; print(websockets.__version__)' 2>/dev/null) != "$SWARMDECK_WEBSOCKETS_VERSION" ]]; then
    log "installing websockets $SWARMDECK_WEBSOCKETS_VERSION into $venv"
    "$venv/bin/pip" install -q "websockets==$SWARMDECK_WEBSOCKETS_VERSION" >&2 || die "could not install websockets from PyPI"
  fi
  echo "$venv/bin/python"
}

# wait_ready: every container of the stack healthy (replicas included) and every service ready
# through the edge, within 240 s. The caller defines compose() (docker-compose with its project
# and files) and sets $edge.
wait_ready() {
  local deadline=$((SECONDS + 240)) container status name containers services
  containers=$(compose ps -q)
  [[ -n $containers ]] || die "docker-compose ps lists no container"
  for container in $containers; do
    until status=$(docker inspect -f '{{.State.Health.Status}}' "$container") && [[ $status == healthy ]]; do
      [[ $status != unhealthy ]] || die "container $(docker inspect -f '{{.Name}}' "$container") is unhealthy"
      ((SECONDS < deadline)) || die "container $(docker inspect -f '{{.Name}}' "$container") not healthy after 240 s ($status)"
      sleep 0.5
    done
  done
  services=$(sed -e 's/#.*//' deploy/local/services | awk 'NF { print $1 }')
  for name in $services; do
    wait_for_http "$edge/readyz/$name" $((deadline - SECONDS)) || die "$name is not ready through the edge"
  done
}

# in_cli_image COMMAND…: COMMAND in a container of the stack's image ($SWARMDECK_TAG), on the
# host's network, with the signing key and the edge's CA of $SWARMDECK_SECRETS.
in_cli_image() {
  docker run --rm --network host -v "$SWARMDECK_SECRETS/jwt-es256.pem:/run/secrets/jwt-es256.pem:ro" \
    -v "$SWARMDECK_SECRETS/edge-ca.pem:/run/secrets/edge-ca.pem:ro" -e SWARMDECK_CA_FILE=/run/secrets/edge-ca.pem \
    "swarmdeck:$SWARMDECK_TAG" "$@"
}

# run_cli ARGS…: the swarmdeck CLI (in_cli_image).
run_cli() { in_cli_image swarmdeck "$@"; }

# route_tenants COUNT PREFIX: the resume check's tenants (PREFIX-1…PREFIX-COUNT), each with an
# access token of every scope (15 minutes) and an ingest key, as the JSON it reads from
# $SMOKE_TENANTS. The caller defines check() (smoke_check.py against $edge).
route_tenants() {
  local tokens
  tokens=$(in_cli_image bash -c 'for i in $(seq 1 "$1"); do
        swarmdeck token mint --key-file /run/secrets/jwt-es256.pem --tenant "$2-$i" --subject resume-check --all-scopes --ttl 900 || exit 1
      done' _ "$1" "$2") || die "could not mint the resume check's tokens"
  check tenants --prefix "$2" <<<"$tokens"
}

# scan_image IMAGE PATTERNS: die if a line of the file PATTERNS (secrets) is anywhere in IMAGE's
# layers (docker save, grepped whole as it streams: one pass, nothing written). The same scan
# must find a string every image holds (the base's os-release), or it proves nothing.
scan_image() {
  local image=$1 patterns=$2 found os_release='PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"'
  # What matched, each once (never printed: it may be a secret).
  found=$(docker save "$image" | { grep -aoF -f "$patterns" -e "$os_release" || (($? == 1)); } | sort -u) ||
    die "the layer scan of $image failed"
  grep -qxF "$os_release" <<<"$found" || die "the layer scan does not see inside $image"
  if grep -qvxF "$os_release" <<<"$found"; then die "a secret is inside image $image"; fi
}
