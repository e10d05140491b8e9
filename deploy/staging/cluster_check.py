#!/usr/bin/env python3
"""The cluster compose's failover check (deploy/staging/cluster/check runs it).

An agent of the tenant works through the edge as a connector would: it opens its session, polls
its commands and acknowledges each, and opens an approval gate every second. Meanwhile events go
to ingest in batches (each retried with its own msgIds until it is acknowledged), an operator
pauses and resumes the agent (each command retried with its own requestId until control-api
answers 202) and decides every gate (retried with its own decisionId until approvals answers).

After a few seconds of that, the NATS server leading the command stream is killed; once every
kind of traffic has gone through again, the Postgres primary is killed (Patroni promotes the
synchronous replica, haproxy follows it, PgBouncer reconnects). Traffic runs until everything
has gone through again, then stops, and the check reads back:

  events    every acknowledged msgId in the log once, at the seq ingest answered, and the
            tenant's seqs contiguous from 1 (read on the new primary);
  commands  every command control-api acknowledged reached the agent;
  gates     every gate approvals opened and every decision it acknowledged reached the agent
            as the gate's outcome.

Prints, for each kill, the longest each kind of traffic went without an answer (from the
sending of a request that failed to the next success, or a success that took over a second;
a long poll's own wait does not count) and exits 1 on anything lost.
"""

import argparse
import http.client
import json
import os
import subprocess
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from smoke_check import api  # noqa: E402


def docker(*args, timeout=30, stdin=None):
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, input=stdin)


def container(project, service, index=1):
    return f"{project}_{service}_{index}"


def http_get(name, port, path):
    """GET http://127.0.0.1:PORT/PATH inside a container (bash alone: no curl there); the body."""
    script = (f'exec 3<>/dev/tcp/127.0.0.1/{port}; '
              f'printf "GET {path} HTTP/1.0\\r\\nHost: 127.0.0.1\\r\\n\\r\\n" >&3; timeout 5 cat <&3')
    out = docker("exec", name, "bash", "-c", script).stdout  # text mode: \r\n reads as \n
    return out.split("\n\n", 1)[1] if "\n\n" in out else ""


def streams(project):
    """The JetStream streams as the first NATS server that answers reports them (its monitoring port)."""
    for service in ("nats", "nats-2", "nats-3"):
        body = http_get(container(project, service), 8222, "/jsz?accounts=true&streams=true&config=true")
        try:
            report = json.loads(body)
        except ValueError:
            continue
        return [stream for account in report.get("account_details", []) for stream in account.get("stream_detail", [])]
    return []


def stream_leader(project, stream_prefix):
    """The NATS server leading the stream whose name starts with stream_prefix."""
    for stream in streams(project):
        if stream["name"].startswith(stream_prefix) and stream.get("cluster", {}).get("leader"):
            return stream["cluster"]["leader"]
    return None


def stream_replicas(project):
    """name=replicas for each stream, as configured ("" when no server answers)."""
    return " ".join(f"{s['name']}={s.get('config', {}).get('num_replicas')}" for s in streams(project))


def patroni_members(project):
    """{member: role} of the members Patroni reports running or streaming (Leader, Sync Standby,
    Replica), asked of either node; {} when neither answers."""
    for service in ("postgres", "postgres-2"):
        out = docker("exec", container(project, service), "patronictl", "-c", "/tmp/patroni/patroni.yml",
                     "list", "-f", "json")
        try:
            members = json.loads(out.stdout)
        except ValueError:
            continue
        return {m["Member"]: m.get("Role") for m in members if m.get("State") in ("running", "streaming")}
    return {}


def postgres_primary(project):
    """The Patroni member that is the primary (its compose service name)."""
    return next((name for name, role in patroni_members(project).items() if role == "Leader"), None)


def kill(name):
    """docker kill, which must succeed."""
    out = docker("kill", name)
    if out.returncode != 0:
        sys.exit(f"docker kill {name} failed: {out.stderr.strip()}")


class Outages:
    """For one kind of traffic, the spans it went without an answer: from the moment the first
    failed attempt was sent to the end of the next success, and any success that took longer
    than a second (from its sending)."""

    SLOW = 1.0

    def __init__(self):
        self.lock = threading.Lock()
        self.failing_since = None
        self.spans = []      # (start, end)
        self.successes = 0
        self.last_success_sent = 0.0  # when the last request that succeeded was sent
        self.in_flight = []           # when each request waiting for its answer was sent
        self.errors = {}

    def sending(self, sent):
        with self.lock:
            self.in_flight.append(sent)

    def answered(self, sent):
        with self.lock:
            self.in_flight.remove(sent)

    def through_since(self, moment):
        """A request sent after `moment` succeeded, none is failing, and none sent before it
        still waits for its answer."""
        with self.lock:
            return (self.last_success_sent > moment and self.failing_since is None
                    and all(sent > moment for sent in self.in_flight))

    def failed(self, why, sent):
        with self.lock:
            if self.failing_since is None:
                self.failing_since = sent
            self.errors[why] = self.errors.get(why, 0) + 1

    def succeeded(self, sent, timed=True):
        """A success of a request sent at `sent`; `timed`: its time to answer is a wait (a long
        poll's is not)."""
        with self.lock:
            now = time.time()
            if self.failing_since is not None:
                self.spans.append((self.failing_since, now))
                self.failing_since = None
            elif timed and now - sent > self.SLOW:
                self.spans.append((sent, now))
            self.successes += 1
            self.last_success_sent = max(self.last_success_sent, sent)

    def longest_within(self, start, end):
        """The longest span without an answer that overlaps [start, end) (one may begin with a
        request sent just before start)."""
        with self.lock:
            spans = [b - a for a, b in self.spans if a < end and b > start]
            if self.failing_since is not None and self.failing_since < end:
                spans.append(time.time() - self.failing_since)
        return max(spans, default=0.0)


# How long one request is retried before the check gives up on it.
GIVE_UP = 180


def answer(call, outages=None, sent=None):
    """(status, body) of one request; (None, the error's type) when there was no answer. With
    `outages`, the request counts as in flight meanwhile."""
    if outages is not None:
        outages.sending(sent)
    try:
        return call()
    except (OSError, ValueError, http.client.HTTPException) as error:
        return None, type(error).__name__
    finally:
        if outages is not None:
            outages.answered(sent)


def attempt(outages, call, ok):
    """Call until ok(status); each failure (no answer, 5xx, 429…) is counted and retried, for
    GIVE_UP seconds at most."""
    deadline = time.time() + GIVE_UP
    while True:
        sent = time.time()
        status, body = answer(call, outages, sent)
        if ok(status):
            outages.succeeded(sent)
            return status, body
        outages.failed(str(status) if status is not None else body, sent)
        if status in (400, 401, 403, 404, 409, 422):
            raise RuntimeError(f"refused: {status} {body}")
        if time.time() > deadline:
            raise RuntimeError(f"no success in {GIVE_UP} s, last {status} {body}")
        time.sleep(0.2)


class Scenario:
    def __init__(self, args):
        self.args = args
        self.edge = args.edge
        self.swarm, self.agent = "cluster", args.agent
        self.run_id = uuid.uuid4().hex[:8]
        self.stop = threading.Event()
        self.failures = []
        self.events = Outages()
        self.commands = Outages()
        self.gates = Outages()
        self.polls = Outages()
        self.acked_events = {}      # msgId -> seq
        self.sent_commands = {}     # requestIds control-api answered 202
        self.received = {}          # requestId -> times delivered
        self.opened_gates = {}      # idempotencyKey -> gateId
        self.decided_gates = set()  # gateIds whose decision approvals acknowledged
        self.outcomes = {}          # gateId -> status delivered to the agent
        self.lock = threading.Lock()
        self.session_token = None
        self.crashed = []           # what ended a worker thread
        self.producers_done = threading.Event()  # no command, gate or decision is still being sent
        self.drain_deadline = float("inf")

    def worker(self, target):
        """target on a thread of its own; an exception that ends it is recorded in crashed."""
        def run():
            try:
                target()
            except Exception as error:  # noqa: BLE001 - recorded, and fails the check
                self.crashed.append(f"{target.__name__}: {error!r}")
        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread

    def call(self, method, path, token, body=None):
        return lambda: api(self.edge, method, path, token, body)

    # The agent.
    def open_session(self):
        status, body = attempt(self.polls, self.call("POST", "/v1/agent/sessions", self.args.ingest_key,
                                                     {"swarmId": self.swarm, "agentId": self.agent}),
                               lambda s: s in (200, 201))
        self.session_token = body["token"]

    def poll(self):
        while not self.producers_done.is_set() or self.pending():
            if time.time() > self.drain_deadline:
                return
            sent = time.time()
            status, body = answer(lambda: api(self.edge, "GET", "/v1/agent/commands?waitSeconds=2", self.session_token),
                                  self.polls, sent)
            if status == 401:
                self.open_session()
                continue
            if status != 200:
                self.polls.failed(str(status) if status is not None else body, sent)
                time.sleep(0.2)
                continue
            # A long poll answers when a command comes or after its wait: its time is not a wait.
            self.polls.succeeded(sent, timed=False)
            for command in body["commands"]:
                with self.lock:
                    if command["action"] == "gate":
                        gate = command["gate"]
                        self.outcomes[gate["gateId"]] = gate["status"]
                    else:
                        self.received[command["requestId"]] = self.received.get(command["requestId"], 0) + 1
                state = "paused" if command["action"] == "pause" else "running"
                attempt(self.polls, self.call("POST", "/v1/agent/commands/ack", self.session_token,
                                              {"commandId": command["commandId"], "ackToken": command["ackToken"],
                                               "outcome": "applied", "state": state}),
                        lambda s: s in (200, 204))

    def pending(self):
        with self.lock:
            commands = set(self.sent_commands) - set(self.received)
            gates = self.decided_gates - set(self.outcomes)
        return bool(commands or gates)

    def open_gates(self):
        n = 0
        while not self.stop.is_set():
            key = f"{self.run_id}-gate-{n}"  # a run's own: a key seen before answers its old gate
            status, body = attempt(self.gates, self.call("POST", "/v1/agent/gates", self.session_token,
                                                         {"idempotencyKey": key, "summary": f"cluster step {n}",
                                                          "tool": "Bash", "toolInput": {"command": "true"},
                                                          "expiresInSeconds": 3600}),
                                   lambda s: s in (200, 201))
            gate = body["gateId"]
            with self.lock:
                self.opened_gates[key] = gate
            decision = {"decision": "approve", "decisionId": f"decide-{gate}"}
            attempt(self.gates, self.call("POST", f"/v1/approval-gates/{gate}/decision", self.args.token, decision),
                    lambda s: s == 200)
            with self.lock:
                self.decided_gates.add(gate)
            n += 1
            time.sleep(1)

    # The operator.
    def send_commands(self):
        n = 0
        while not self.stop.is_set():
            request = uuid.uuid4().hex
            action = "pause" if n % 2 == 0 else "resume"
            status, body = attempt(self.commands, self.call("POST", f"/v1/agents/{self.agent}/control", self.args.token,
                                                            {"action": action, "reason": "cluster check",
                                                             "requestId": request}),
                                   lambda s: s == 202)
            with self.lock:
                self.sent_commands[request] = True
            n += 1
            time.sleep(0.5)

    # The events.
    def post_events(self):
        n = 0
        while not self.stop.is_set():
            events = [{"msgId": f"{self.run_id}-{i}", "swarmId": self.swarm, "agentId": "cluster-writer", "kind": "log",
                       "message": f"cluster event {i}"} for i in range(n, n + 20)]
            status, body = attempt(self.events, self.call("POST", "/v1/ingest/events", self.args.ingest_key,
                                                          {"events": events}), lambda s: s == 200)
            with self.lock:
                for result in body["results"]:
                    if result["status"] in ("accepted", "duplicate"):
                        self.acked_events[result["msgId"]] = result["seq"]
                    else:
                        self.failures.append(f"ingest refused {result}")
            n += 20
            time.sleep(0.05)

    def all_through_since(self, moment):
        """Whether every kind of traffic is through since `moment` (Outages.through_since)."""
        return all(o.through_since(moment) for o in (self.events, self.commands, self.gates, self.polls))

    def wait_through(self, since, what, limit):
        deadline = time.time() + limit
        while not self.all_through_since(since):
            if self.crashed:
                sys.exit(f"{what}: a worker stopped: {self.crashed}")
            if time.time() > deadline:
                sys.exit(f"{what}: traffic did not get through again within {limit:.0f} s "
                         f"(events {self.events.errors}, commands {self.commands.errors}, gates {self.gates.errors}, "
                         f"polls {self.polls.errors})")
            time.sleep(0.2)
        # A margin of traffic after it.
        time.sleep(2)
        return time.time()

    def report(self, what, start, end):
        spans = {name: outages.longest_within(start, end) for name, outages in
                 (("events", self.events), ("commands", self.commands), ("gates", self.gates),
                  ("agent polls", self.polls))}
        print(f"{what}: longest without an answer " + ", ".join(f"{name} {span:.1f} s" for name, span in spans.items()))
        return spans

    def print_errors(self):
        """What the failed attempts got, over the whole run (status code, or the error's type)."""
        for name, outages in (("events", self.events), ("commands", self.commands), ("gates", self.gates),
                              ("agent polls", self.polls)):
            print(f"  {name}: {outages.successes} succeeded; failed attempts {json.dumps(outages.errors)}")

    def run(self):
        project = self.args.project
        self.open_session()
        # The agent exists for control-api once its first state event is in.
        attempt(self.events, self.call("POST", "/v1/ingest/events", self.args.ingest_key,
                                       {"events": [{"msgId": f"{self.agent}-up", "swarmId": self.swarm,
                                                    "agentId": self.agent, "kind": "state", "state": "running"}]}),
                lambda s: s == 200)
        deadline = time.time() + 30
        while api(self.edge, "GET", f"/v1/agents/{self.agent}", self.args.token)[0] != 200:
            if time.time() > deadline:
                sys.exit("the agent never appeared in control-api's fleet")
            time.sleep(0.2)
        poller = self.worker(self.poll)
        producers = [self.worker(target) for target in (self.open_gates, self.send_commands, self.post_events)]
        time.sleep(5)
        self.wait_through(time.time() - 5, "before the kills", 60)

        # 1. The NATS server leading the command stream.
        leader = stream_leader(project, "SD_CONTROL")
        if leader is None:
            sys.exit("no NATS server leads the command stream")
        kill(container(project, leader))
        killed = time.time()
        print(f"killed NATS server {leader}, the command stream's leader")
        through = self.wait_through(killed, "after the NATS kill", self.args.bound)
        while (new_leader := stream_leader(project, "SD_CONTROL")) in (None, leader):
            if time.time() - killed > self.args.bound:
                sys.exit(f"no other NATS server leads the command stream {self.args.bound:.0f} s after the kill")
            time.sleep(0.2)
        print(f"the command stream's leader is now {new_leader}")
        nats_spans = self.report("NATS leader killed", killed, through)

        # 2. The Postgres primary, once its replica is synchronous (so it holds every commit).
        deadline = time.time() + self.args.bound
        while not (members := patroni_members(project)) or not {"Leader", "Sync Standby"} <= set(members.values()):
            if time.time() > deadline:
                sys.exit(f"Patroni has no primary with a synchronous replica: {members}")
            time.sleep(0.5)
        primary = next(name for name, role in members.items() if role == "Leader")
        kill(container(project, primary))
        killed = time.time()
        print(f"killed Postgres primary {primary} (its synchronous replica: "
              f"{next(name for name, role in members.items() if role == 'Sync Standby')})")
        while (now_primary := postgres_primary(project)) in (None, primary):
            if time.time() - killed > self.args.bound:
                sys.exit(f"Patroni promoted no replica within {self.args.bound:.0f} s")
            time.sleep(0.2)
        promoted = time.time() - killed
        print(f"Patroni promoted {now_primary} {promoted:.1f} s after the kill")
        through = self.wait_through(killed, "after the Postgres kill", self.args.bound)
        postgres_spans = self.report("Postgres primary killed", killed, through)

        # The killed ones come back while traffic goes on: the old primary as a replica.
        for name in (leader, primary):
            out = docker("start", container(project, name))
            if out.returncode != 0:
                sys.exit(f"docker start {name} failed: {out.stderr.strip()}")
        started = time.time()
        while patroni_members(project).get(primary) not in ("Replica", "Sync Standby"):
            if time.time() - started > self.args.bound:
                sys.exit(f"{primary} did not come back as a replica: {patroni_members(project)}")
            time.sleep(0.5)
        print(f"{primary} is back as a replica {time.time() - started:.1f} s after its start")
        self.stop.set()
        for thread in producers:
            thread.join(timeout=GIVE_UP + 20)
        # Then the agent takes what is still due to it, for 30 s at most (and its last
        # acknowledgement's retries).
        self.drain_deadline = time.time() + 30
        self.producers_done.set()
        poller.join(timeout=30 + GIVE_UP + 20)
        alive = [name for name, thread in (("producers", producers), ("poller", [poller]))
                 if any(t.is_alive() for t in thread)]
        if alive or self.crashed:
            sys.exit(f"a worker did not finish: still running {alive}, stopped by {self.crashed}")
        self.print_errors()
        self.verify(now_primary)
        print(json.dumps({"nats": nats_spans, "postgres": postgres_spans, "promotion": round(promoted, 1)}))

    def verify(self, primary):
        tenant = self.args.tenant
        # The tenant as a psql variable, quoted by psql (read from standard input, where psql
        # interpolates).
        out = docker("exec", "-i", container(self.args.project, primary), "psql", "-X", "-h", "/run/postgresql", "-U",
                     "postgres", "-d", "swarmdeck", "-AtF", " ", "-v", f"tenant={tenant}", timeout=60,
                     stdin="SELECT seq, msg_id FROM ingest.events WHERE tenant_id = :'tenant' ORDER BY seq;\n")
        if out.returncode != 0:
            sys.exit(f"reading the log failed: {out.stderr}")
        rows = [line.split(" ", 1) for line in out.stdout.splitlines() if line]
        seqs = [int(seq) for seq, _ in rows]
        stored = {}
        for seq, msg_id in rows:
            stored.setdefault(msg_id, []).append(int(seq))
        contiguous = seqs == list(range(1, len(seqs) + 1))
        lost = [m for m, seq in self.acked_events.items() if stored.get(m) != [seq]]
        repeated = [m for m, found in stored.items() if len(found) > 1]
        missing_commands = set(self.sent_commands) - set(self.received)
        repeated_commands = sum(1 for n in self.received.values() if n > 1)
        missing_outcomes = self.decided_gates - set(self.outcomes)
        wrong_outcomes = [g for g in self.decided_gates if self.outcomes.get(g) not in (None, "approved")]
        print(f"events: {len(self.acked_events)} acknowledged, {len(lost)} lost or moved; the log holds "
              f"{len(seqs)} seqs, contiguous from 1: {contiguous}, {len(repeated)} msgIds twice")
        print(f"commands: {len(self.sent_commands)} acknowledged by control-api, {len(missing_commands)} never "
              f"reached the agent ({repeated_commands} delivered more than once)")
        print(f"gates: {len(self.opened_gates)} opened, {len(self.decided_gates)} decided, "
              f"{len(missing_outcomes)} outcomes never reached the agent, {len(wrong_outcomes)} wrong")
        failures = list(self.failures)
        # Out of reach is 503 (retry) in the error vocabulary, never 500.
        for name, outages in (("events", self.events), ("commands", self.commands), ("gates", self.gates),
                              ("agent polls", self.polls)):
            if outages.errors.get("500"):
                failures.append(f"{name}: {outages.errors['500']} attempts answered 500 (ServerError), not 503")
        if lost:
            failures.append(f"acknowledged events lost: {lost[:10]}")
        if not contiguous:
            failures.append("the tenant's seqs have a gap or a repeat")
        if repeated:
            failures.append(f"msgIds stored twice: {repeated[:10]}")
        if missing_commands:
            failures.append(f"acknowledged commands never delivered: {sorted(missing_commands)[:10]}")
        if missing_outcomes or wrong_outcomes:
            failures.append(f"gate outcomes missing {sorted(missing_outcomes)[:10]} or wrong {wrong_outcomes[:10]}")
        if not self.acked_events or not self.sent_commands or not self.decided_gates:
            failures.append("some kind of traffic never went through")
        for failure in failures:
            print("  " + failure)
        if failures:
            sys.exit(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edge", required=True)
    parser.add_argument("--project", required=True, help="the compose project")
    parser.add_argument("--tenant", required=True)
    parser.add_argument("--token", default=os.environ.get("SMOKE_TOKEN"),
                        help="an operator's token: agents:control and approvals:decide (default: $SMOKE_TOKEN)")
    parser.add_argument("--ingest-key", default=os.environ.get("SMOKE_INGEST_KEY"))
    parser.add_argument("--agent", default="cluster-agent")
    parser.add_argument("--bound", type=float, default=60,
                        help="seconds within which a kill is noticed (a new leader, a promotion) and all traffic is through again")
    Scenario(parser.parse_args()).run()


if __name__ == "__main__":
    main()
