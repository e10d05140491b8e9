// An agent's state from the free-form state of its `state` events, mapped as control-api maps
// it (AgentState+status.swift, docs/control-api.md), so a live update reads as the fleet's `state` does.
const MAP = {
  terminated: 'terminated', exited: 'terminated', completed: 'terminated', done: 'terminated', killed: 'terminated',
  idle: 'idle',
  paused: 'paused', stopped: 'paused', suspended: 'paused',
  waiting: 'waiting', waiting_approval: 'waiting', blocked: 'waiting',
  error: 'error', failed: 'error', crashed: 'error',
};

/** The `state` the fleet shows for a `state` event's state. */
export function agentStatus(state) {
  return MAP[String(state).toLowerCase()] ?? 'running';
}
