#!/usr/bin/env python3
"""The staging smoke's checks against the stack's edge (deploy/staging/smoke runs them).

  register   trade an enrolment code for a device's access token (printed)
  stream     post events to ingest and see each on /v1/stream
  pause      pause an agent through control-api and see its state become paused
  replay     the events of a swarm are still in the log (after down and up)
  tenants    make the resume check's tenants an ingest key each
  resume     the resume check, below

resume: for each tenant of $SMOKE_TENANTS, CLIENTS WebSocket clients subscribe to /v1/stream
through the edge, filtered to a swarm of the tenant's; EVENTS events are posted to ingest for each
(with a number 0..EVENTS-1 in each message). The tenant-affine route (fanout-router, whose log
names each tenant's replica) must put each tenant's clients on one replica, and the tenants on
more than one. After a third of the events, the replica holding the most tenants is killed. Its
tenants' clients reconnect through the edge, each tenant's to one other replica, and subscribe
again with the last eventId they had; the other tenants' clients never move. At the end every
client must hold every number exactly once, in seq order.

Prints the tenants per replica, where the moved ones went and the counts; exits 1 on any missing,
repeated or out-of-order event, and on a tenant split over replicas.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid

from websockets.exceptions import WebSocketException
from websockets.sync.client import connect


class ServerError(Exception):
    """An `error` frame from the server."""


class Client(threading.Thread):
    def __init__(self, index, url, token, swarm, expected, deadline):
        super().__init__(daemon=True)
        self.index, self.url, self.token, self.swarm = index, url, token, swarm
        self.expected, self.deadline = expected, deadline
        self.numbers = []          # the number of each event received, in arrival order
        self.seqs = []
        self.last_event_id = None  # resume point
        self.connections = 0
        self.gaps = []
        self.subscribed = threading.Event()
        self.complete = threading.Event()  # set once every expected event is in
        self.linger = None                 # an Event: stay connected until it is set
        self.error = None
        self.errors = []                   # what made it reconnect

    def done(self):
        if len(self.numbers) >= self.expected:
            self.complete.set()
            return self.linger is None or self.linger.is_set()
        return False

    def run(self):
        while not self.done() and time.time() < self.deadline:
            try:
                self.session()
            except (WebSocketException, OSError, ServerError) as error:
                # A dropped connection, a refused or failed handshake (the edge answers 502
                # while its DNS still names a dead replica), or a server error frame: a client
                # reconnects and resumes from its last eventId.
                if not self.done():
                    self.errors.append(repr(error))
                    time.sleep(0.2)
            except Exception as error:  # noqa: BLE001 - reported, not hidden
                self.error = repr(error)
                return

    def session(self):
        with connect(self.url, additional_headers={"Authorization": f"Bearer {self.token}"},
                     open_timeout=5, close_timeout=1) as ws:
            self.connections += 1
            subscribe = {"type": "subscribe", "requestId": uuid.uuid4().hex,
                         "filters": {"swarmIds": [self.swarm]}, "maxEventsPerSecond": 10000}
            if self.last_event_id is not None:
                subscribe["lastEventId"] = self.last_event_id
            ws.send(json.dumps(subscribe))
            while not self.done() and time.time() < self.deadline:
                try:
                    raw = ws.recv(timeout=1)
                except TimeoutError:
                    continue
                message = json.loads(raw)
                kind = message.get("type")
                if kind == "subscribed":
                    if self.last_event_id is None:
                        # Live from here: resuming later starts after this point.
                        self.last_event_id = str(message["fromSeq"] - 1)
                    self.subscribed.set()
                elif kind == "ping":
                    ws.send(json.dumps({"type": "pong"}))
                elif kind == "gap":
                    self.gaps.append(message)
                elif kind == "error":
                    raise ServerError(message)
                elif "seq" in message:
                    # Other frames of the swarm (health-monitor's metric frames) move the
                    # resume point but are not the smoke's events.
                    if kind == "log" and message.get("agentId") == "smoke":
                        self.seqs.append(message["seq"])
                        self.numbers.append(int(message["message"].split()[-1]))
                    self.last_event_id = message["eventId"]


def post_events(edge, key, swarm, start, stop, batch=20):
    for first in range(start, stop, batch):
        events = [{"msgId": f"{swarm}-{n}", "swarmId": swarm, "agentId": "smoke", "kind": "log",
                   "level": "info", "message": f"smoke event {n}"}
                  for n in range(first, min(first + batch, stop))]
        for attempt in range(50):  # an ingest replica may be briefly unavailable: retrying is safe
            try:
                status, _ = api(edge, "POST", "/v1/ingest/events", key, {"events": events})
            except (OSError, ValueError):  # no answer, or not JSON (not ingest's)
                status = None
            if status in (200, 207):
                break
            time.sleep(0.2)
        else:
            raise RuntimeError(f"could not post events {first}..")
        time.sleep(0.02)


def api(edge, method, path, token, body=None):
    """One JSON request; returns (status, decoded body)."""
    request = urllib.request.Request(
        f"{edge}{path}", method=method, data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        raw = error.read()
        try:
            return error.code, json.loads(raw or b"null")
        except ValueError:  # not the services' envelope (the edge's own page): the status stands
            return error.code, raw.decode(errors="replace")


def register(args):
    status, body = api(args.edge, "POST", "/v1/auth/device/register", None,
                       {"code": os.environ["SMOKE_CODE"], "deviceName": "staging smoke", "platform": "ios"})
    if status != 201:
        sys.exit(f"register: {status} {body}")
    print(body["accessToken"])


def collect(url, token, swarm, count, last_event_id=None, timeout=30):
    """Subscribe to one swarm's events; the client stays a second after the `count`-th, so a
    repeated event would be seen."""
    client = Client(0, url, token, swarm, count, time.time() + timeout)
    client.last_event_id = last_event_id
    client.linger = threading.Event()
    client.start()
    threading.Thread(target=lambda: client.complete.wait(timeout) and (time.sleep(1), client.linger.set()),
                     daemon=True).start()
    return client


def require_all_once(client, count, what):
    """Exit unless the client got the events numbered 0..count-1, each once, in order."""
    if client.numbers != list(range(count)):
        sys.exit(f"{what}: expected events 0..{count - 1} once each, in order, got {client.numbers} "
                 f"(error: {client.error or client.errors})")


def stream(args):
    """Events posted to ingest arrive on /v1/stream, each once."""
    swarm = "smoke-" + uuid.uuid4().hex[:8]
    client = collect(ws_url(args.edge), args.token, swarm, args.events)
    if not client.subscribed.wait(timeout=30):
        sys.exit(f"stream: no subscription: {client.error or client.errors}")
    post_events(args.edge, args.ingest_key, swarm, 0, args.events)
    client.join()
    require_all_once(client, args.events, "stream")
    print(f"stream: {args.events} events posted to ingest and seen on /v1/stream (swarm {swarm})")
    print(swarm)


def replay(args):
    """The swarm's events are in the log: replayed from the start, each once."""
    client = collect(ws_url(args.edge), args.token, args.swarm, args.events, last_event_id="0")
    client.join()
    require_all_once(client, args.events, f"replay of {args.swarm}")
    print(f"replay: the {args.events} events of {args.swarm} are still in the log")


def pause(args):
    """The agent shows up, is paused through control-api, and reports paused."""
    deadline = time.time() + 60
    agent = None
    while time.time() < deadline:
        status, agent = api(args.edge, "GET", f"/v1/agents/{args.agent}", args.token)
        if status == 200 and agent.get("status") == "running":
            break
        time.sleep(0.5)
    else:
        sys.exit(f"pause: agent {args.agent} never ran: {agent}")
    status, receipt = api(args.edge, "POST", f"/v1/agents/{args.agent}/control", args.token,
                          {"action": "pause", "reason": "staging smoke", "requestId": uuid.uuid4().hex})
    if status != 202:
        sys.exit(f"pause: {status} {receipt}")
    started = time.time()
    while time.time() < deadline:
        status, agent = api(args.edge, "GET", f"/v1/agents/{args.agent}", args.token)
        if agent.get("status") == "paused":
            print(f"pause: agent {args.agent} paused through control-api in {(time.time() - started) * 1000:.0f} ms")
            return
        time.sleep(0.2)
    sys.exit(f"pause: agent {args.agent} not paused: {agent}")


def tenants(args):
    """Reads access tokens (one a line, for PREFIX-1, PREFIX-2…) and makes each tenant an ingest
    key: prints the JSON the resume check reads from $SMOKE_TENANTS."""
    made = []
    for index, token in enumerate(line.strip() for line in sys.stdin if line.strip()):
        status, body = api(args.edge, "POST", "/v1/admin/ingest-keys", token, {"name": "resume check"})
        if status != 201:
            sys.exit(f"tenants: an ingest key for {args.prefix}-{index + 1}: {status} {body}")
        made.append({"tenant": f"{args.prefix}-{index + 1}", "token": token, "ingestKey": body["key"]})
    print(json.dumps(made))


def ws_url(edge):
    # https://… becomes wss://…; the CA Python trusts is SSL_CERT_FILE (the smoke sets it).
    return edge.replace("http", "ws", 1) + "/v1/stream?protocol=1"


def container_addresses(containers):
    """Each container's address on its networks (the address the router logs), to the container."""
    addresses = {}
    for container in containers:
        out = subprocess.run(["docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}",
                              container], capture_output=True, text=True, timeout=20)
        for address in out.stdout.split():
            addresses[address] = container
    return addresses


ROUTE_LINE = re.compile(r'^tenant="((?:[^"\\]|\\.)*)" server=(\S+) address=(\S+) status=(\d+)')


def routed(router):
    """The router's log, as (tenant, replica address, status) for each connection it logged."""
    out = subprocess.run(["docker", "logs", router], capture_output=True, text=True, timeout=30)
    lines = []
    for line in (out.stdout + out.stderr).splitlines():
        match = ROUTE_LINE.match(line)
        if match:
            lines.append((match.group(1), match.group(3), match.group(4)))
    return lines


def wait_router(router, count, timeout=30):
    """Until the router holds `count` replicas up (its /stats CSV, from inside its container): a
    replica just started is in DNS within 2 s and up after two health checks."""
    script = ('exec 3<>/dev/tcp/127.0.0.1/8081; printf "GET /stats;csv HTTP/1.0\\r\\n\\r\\n" >&3; '
              'timeout 5 cat <&3')
    deadline = time.time() + timeout
    up = 0
    while time.time() < deadline:
        out = subprocess.run(["docker", "exec", router, "bash", "-c", script], capture_output=True, text=True,
                             timeout=20)
        up = sum(1 for row in out.stdout.splitlines()
                 if row.startswith("stream-fanout,fanout") and row.split(",")[17].startswith("UP"))
        if up == count:
            return
        time.sleep(0.5)
    sys.exit(f"the router holds {up} stream-fanout replicas up, not {count}, after {timeout} s")


def placements(lines, tenants):
    """tenant -> the replica addresses its upgrades went to (those accepted)."""
    placed = {tenant: set() for tenant in tenants}
    for tenant, address, status in lines:
        if tenant in placed and status == "101":
            placed[tenant].add(address)
    return placed


def resume(args):
    """The resume check, with the tenant-affine route: several tenants, each with CLIENTS clients.
    Every tenant's clients land on one replica (and the tenants on more than one); the replica
    holding the most tenants is killed mid-stream; its tenants move, each whole to one other
    replica, where their clients resume by seq; the other tenants' clients never move."""
    tenants = json.loads(os.environ["SMOKE_TENANTS"])
    containers = args.containers.split(",")
    addresses = container_addresses(containers)
    wait_router(args.router, len(containers))
    deadline = time.time() + args.timeout
    start = len(routed(args.router))
    clients = {}
    swarms = {}
    linger = threading.Event()
    for tenant in tenants:
        name = tenant["tenant"]
        swarms[name] = "smoke-" + uuid.uuid4().hex[:8]
        clients[name] = [Client(i, ws_url(args.edge), tenant["token"], swarms[name], args.events, deadline)
                         for i in range(args.clients)]
        for client in clients[name]:
            client.linger = linger
            client.start()
    everyone = [client for group in clients.values() for client in group]
    for client in everyone:
        if not client.subscribed.wait(timeout=30):
            sys.exit(f"client {client.index} did not subscribe: {client.error}")

    failures = []
    lines = routed(args.router)[start:]
    before = placements(lines, clients)
    home = {}
    for name, found in before.items():
        accepted = sum(1 for tenant, _, status in lines if tenant == name and status == "101")
        if len(found) != 1 or accepted != args.clients:
            failures.append(f"tenant {name}: {accepted} upgrades on replicas {sorted(found)}, not {args.clients} on one")
        if found:
            home[name] = sorted(found)[0]
    by_replica = {}
    for name, address in home.items():
        by_replica.setdefault(address, []).append(name)
    print("tenants per stream-fanout replica: " + json.dumps(
        {addresses.get(address, address)[:12]: sorted(names) for address, names in by_replica.items()}))
    if failures:
        for failure in failures:
            print("  " + failure)
        sys.exit(1)
    victim_address = max(by_replica, key=lambda address: len(by_replica[address]))
    victim = addresses.get(victim_address)
    if victim is None:
        sys.exit(f"the router sent clients to {victim_address}, which is none of the stream-fanout containers {addresses}")
    moving = set(by_replica[victim_address])

    # The events go in from a thread per tenant while a replica dies mid-stream.
    posted = {name: 0 for name in clients}

    def poster(tenant):
        name = tenant["tenant"]
        for first in range(0, args.events, 20):
            post_events(args.edge, tenant["ingestKey"], swarms[name], first, min(first + 20, args.events))
            posted[name] = min(first + 20, args.events)

    posting = [threading.Thread(target=poster, args=(tenant,), daemon=True) for tenant in tenants]
    for thread in posting:
        thread.start()
    while min(posted.values()) < args.events // 3 and any(thread.is_alive() for thread in posting):
        time.sleep(0.01)
    mark = len(routed(args.router))
    subprocess.run(["docker", "kill", victim], check=True, capture_output=True)
    print(f"killed stream-fanout {victim[:12]} holding tenants {sorted(moving)}, "
          f"with {min(posted.values())} of {args.events} events posted for each")
    for thread in posting:
        thread.join()

    for client in everyone:
        client.complete.wait(timeout=max(0, deadline - time.time()))
    final = routed(args.router)
    after = placements(final[mark:], clients)
    # Every upgrade since the clients started, before the kill included: a tenant's went to its
    # home replica, and a moved tenant's after the kill to one other.
    for name, early in placements(final[start:mark], clients).items():
        if early != {home[name]}:
            failures.append(f"tenant {name}: upgrades before the kill went to {sorted(early)}, not only to {home[name]}")
    print("replicas of the moved tenants after the kill: " + json.dumps(
        {name: [addresses.get(a, a)[:12] for a in sorted(after[name])] for name in sorted(moving)}))
    linger.set()
    for client in everyone:
        client.join(timeout=5)

    received = duplicates = missing = 0
    for name, group in clients.items():
        for client in group:
            numbers = client.numbers
            received += len(numbers)
            dup = len(numbers) - len(set(numbers))
            miss = args.events - len(set(numbers))
            duplicates += dup
            missing += miss
            ordered = client.seqs == sorted(client.seqs) and numbers == sorted(numbers)
            if dup or miss or not ordered or client.gaps or client.error:
                failures.append(f"tenant {name} client {client.index}: {len(numbers)} events, {dup} repeated, "
                                f"{miss} missing, ordered={ordered}, gaps={client.gaps}, error={client.error}")
    for name in moving:
        if len(after[name]) != 1 or victim_address in after[name]:
            failures.append(f"tenant {name} moved to replicas {sorted(after[name])}, not to one other")
        if any(client.connections < 2 for client in clients[name]):
            failures.append(f"tenant {name}: a client of the killed replica did not reconnect")
    for name in set(clients) - moving:
        if after[name] or any(client.connections != 1 for client in clients[name]):
            failures.append(f"tenant {name} was not on the killed replica but its clients moved: {sorted(after[name])}")
    causes = {}
    for client in everyone:
        for error in client.errors:
            cause = error.split("(")[0]
            causes[cause] = causes.get(cause, 0) + 1
    print(f"reconnections by cause: {json.dumps(causes)}")
    print(f"resume check: {len(clients)} tenants of {args.clients} clients on {len(by_replica)} replicas, "
          f"{len(moving)} tenants moved with the killed replica; {args.events} events each: {received} received "
          f"of {len(everyone) * args.events}, {duplicates} repeated, {missing} missing")
    if len(by_replica) < 2:
        failures.append("the tenants were all on one replica")
    for failure in failures:
        print("  " + failure)
    sys.exit(1 if failures else 0)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edge", default="http://127.0.0.1:8080")
    parser.add_argument("--token", default=os.environ.get("SMOKE_TOKEN"),
                        help="an access token with stream:read and agents:control (default: $SMOKE_TOKEN)")
    parser.add_argument("--ingest-key", default=os.environ.get("SMOKE_INGEST_KEY"),
                        help="the tenant's ingest key (default: $SMOKE_INGEST_KEY)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("register", help="the enrolment code in $SMOKE_CODE")
    command = commands.add_parser("stream")
    command.add_argument("--events", type=int, default=10)
    command = commands.add_parser("replay")
    command.add_argument("--swarm", required=True)
    command.add_argument("--events", type=int, default=10)
    command = commands.add_parser("tenants", help="access tokens on standard input, one a line")
    command.add_argument("--prefix", required=True)
    command = commands.add_parser("pause")
    command.add_argument("--agent", required=True)
    command = commands.add_parser("resume", help="the tenants in $SMOKE_TENANTS (JSON: tenant, token, ingestKey)")
    command.add_argument("--containers", required=True, help="the stream-fanout container ids, comma-separated")
    command.add_argument("--router", required=True, help="the fanout-router container, whose log names each route")
    command.add_argument("--clients", type=int, default=3, help="clients per tenant")
    command.add_argument("--events", type=int, default=600)
    command.add_argument("--timeout", type=float, default=120)
    args = parser.parse_args()
    {"register": register, "stream": stream, "replay": replay, "pause": pause, "resume": resume,
     "tenants": tenants}[args.command](args)


if __name__ == "__main__":
    main()
