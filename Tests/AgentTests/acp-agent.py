#!/usr/bin/env python3
"""Scripted ACP (Agent Client Protocol) agent for the Swift AgentTests.

Speaks ACP as the *agent* side over stdin/stdout (newline-delimited JSON-RPC 2.0),
built on the PyPI package `agent-client-protocol` 0.12.1 (module `acp`). Run it with
/work/main/.build-venv/bin/python. Its replies are deterministic, so the tests can
drive a real ACP client (the connector) against it:

  initialize      -> protocolVersion 1, agentCapabilities.loadSession = true
  session/new     -> {"sessionId": "sess-<12 hex>"}    (sessions kept in memory)
  session/load    -> {} for any id (the id is adopted; no history replay)
  session/prompt  -> chunk "echo: <text>", then depending on the text:
      "permission"  session/request_permission (call-<n>, "rm -rf build", kind delete),
                    then chunk "permission: selected:<optionId>" or "permission: cancelled"
      "slow"        chunk "tick <i>" every 0.2 s for up to 60 s; on session/cancel sends
                    chunk "cancelled" and stops with stopReason "cancelled"
      otherwise     chunks "part 1", "part 2", "part 3"
                    -> {"stopReason": "end_turn"} unless cancelled
  session/cancel  -> cancels that session's running "slow" prompt
A prompt for a session id that was never created or loaded gets a JSON-RPC error -32602.
Only protocol frames go to stdout; logs go to stderr. Exits when stdin closes.
"""

import asyncio
import itertools
import logging
import re
import sys
import uuid
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    run_agent,
    update_agent_message_text,
)
from acp.schema import AgentCapabilities, Implementation, PermissionOption, ToolCallUpdate

log = logging.getLogger("acp-agent")

PERMISSION_OPTIONS = [
    PermissionOption(option_id="allow-once", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="reject-once", name="Reject", kind="reject_once"),
]


class ScriptedAgent:
    # A plain class rather than a subclass of the acp.Agent Protocol: the library
    # routes to any method that exists, so inherited `...` stubs would answer
    # requests we don't support with null instead of "Method not found".

    def __init__(self) -> None:
        self._conn: Any = None  # AgentSideConnection: used to call the client
        self._sessions: dict[str, asyncio.Event] = {}  # sessionId -> cancel flag of its current prompt
        self._tool_calls = itertools.count(1)

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **_: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(load_session=True),
            agent_info=Implementation(name="acp-test-agent", version="1.0"),
        )

    async def new_session(self, cwd: str, **_: Any) -> NewSessionResponse:
        session_id = f"sess-{uuid.uuid4().hex[:12]}"
        self._sessions[session_id] = asyncio.Event()
        log.info("new session %s (cwd=%s)", session_id, cwd)
        return NewSessionResponse(session_id=session_id)

    async def load_session(self, cwd: str, session_id: str, **_: Any) -> LoadSessionResponse:
        self._sessions.setdefault(session_id, asyncio.Event())
        log.info("loaded session %s (cwd=%s)", session_id, cwd)
        return LoadSessionResponse()

    async def cancel(self, session_id: str, **_: Any) -> None:
        log.info("cancel %s", session_id)
        if session_id in self._sessions:
            self._sessions[session_id].set()

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> PromptResponse:
        if session_id not in self._sessions:
            raise RequestError.invalid_params({"sessionId": session_id, "reason": "unknown session"})
        cancelled = self._sessions[session_id] = asyncio.Event()  # fresh flag for this turn
        text = "\n".join(block.text for block in prompt if block.type == "text")

        async def say(message: str) -> None:
            await self._conn.session_update(session_id, update_agent_message_text(message))

        await say(f"echo: {text}")
        if re.search(r"\bpermission\b", text, re.IGNORECASE):
            call_id = f"call-{next(self._tool_calls)}"
            tool_call = ToolCallUpdate(tool_call_id=call_id, title="rm -rf build", kind="delete")
            outcome = (await self._conn.request_permission(session_id, tool_call, PERMISSION_OPTIONS)).outcome
            chosen = f"selected:{outcome.option_id}" if outcome.outcome == "selected" else "cancelled"
            await say(f"permission: {chosen}")
        elif re.search(r"\bslow\b", text, re.IGNORECASE):
            for i in range(1, 301):  # 300 ticks * 0.2 s = 60 s
                await say(f"tick {i}")
                try:
                    await asyncio.wait_for(cancelled.wait(), timeout=0.2)
                except asyncio.TimeoutError:
                    continue
                await say("cancelled")
                return PromptResponse(stop_reason="cancelled")
        else:
            for part in ("part 1", "part 2", "part 3"):
                await say(part)
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="acp-agent: %(message)s")
    asyncio.run(run_agent(ScriptedAgent()))
