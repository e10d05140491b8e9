// An agent (or a worker): status live from the stream, its task, last command, context and
// skill health with sparklines, controls with the phone's confirmations, its terminal, and its
// last events (GET /v1/agents/{id}, its /events, /v1/workers/{id}, health-monitor, /v1/stream).
import { api, seg } from '../api.js';
import { h, replace, link, badge, table, when, percent, facts } from '../dom.js';
import { current } from '../session.js';
import { controlButtons } from '../controls.js';
import { contextHealth, skillHealth } from '../health.js';
import { lastEvents } from '../live.js';
import { agentStatus } from '../status.js';


export async function render(main, [id]) {
  const isWorker = location.pathname.startsWith('/workers/');
  const [agent, worker, recent] = await Promise.all([
    api(`/v1/agents/${seg(id)}`),
    isWorker ? api(`/v1/workers/${seg(id)}`) : null,
    // Its newest events, however long ago (the stream's replay covers only the tenant's last
    // few thousand): seed 000 §12.3's last 50.
    api(`/v1/agents/${seg(id)}/events?limit=50`).catch(() => null),
  ]);
  const scopes = current().scopes;
  // The finer state (terminated, idle, offline are not among seed 000's four statuses).
  const status = h('span', { id: 'agent-status', 'data-status': agent.state }, badge(agent.state));
  const receipt = h('div', { class: 'receipt-box', 'aria-live': 'polite' });
  const { section, stream } = lastEvents({ agentIds: [id] }, {
    initial: recent?.events ?? [],
    onEvent: (frame) => {
      if (frame.type !== 'state' || frame.agentId !== id) return;
      const next = agentStatus(frame.state);
      status.dataset.status = next;
      replace(status, badge(next));
    },
  });
  const terminal = agent.terminal && scopes.includes('terminal:attach') ? await terminalLink(id, agent.terminal) : null;
  const command = agent.lastCommand;
  replace(main,
    h('h1', {}, `${isWorker ? 'Worker' : 'Agent'} ${agent.id}`),
    facts([
      ['Status', status],
      ['Swarm', link(`/swarms/${encodeURIComponent(agent.swarmId)}`, agent.swarmId)],
      ['Task', agent.taskSummary],
      ['Status since', when(agent.updatedAt)],
      ['Last seen', when(agent.lastSeenAt)],
      ['Errors last hour', `${agent.errorsLastHour} of ${agent.eventsLastHour} events (${percent(agent.errorRate)})`],
      ['Last command', command ? [`${command.action} `, badge(command.state), ' ', when(command.issuedAt)] : undefined],
      ['Terminal', agent.terminal ? (terminal ?? `tmux session ${agent.terminal.tmuxSession}${agent.terminal.host ? ` on ${agent.terminal.host}` : ''}`) : undefined],
      // Seed 004's ownership: a registered worker is its principal's (and an admin's).
      ['Registered to', worker ? (worker.worker.owner ?? 'nobody: every operator of the tenant may steer it') : undefined],
    ]),
    controlButtons('agents', id, receipt, current()),
    receipt,
    worker ? h('section', { 'aria-labelledby': 'requests-heading' },
      h('h2', { id: 'requests-heading' }, 'Requests'),
      table('Requests', [
        ['Command', (c) => c.commandId],
        ['State', (c) => badge(c.state)],
        ['Issued', (c) => when(c.issuedAt)],
        ['Message', (c) => c.message ?? ''],
      ], worker.requests, 'No request yet.')) : null,
    h('div', { class: 'grid-2' },
      await contextHealth({ agentId: id }).catch((e) => h('p', { class: 'error-box' }, e.message)),
      await skillHealth({ skills: agent.health?.topFailingSkills ?? [] }).catch((e) => h('p', { class: 'error-box' }, e.message))),
    section);
  return () => stream.close();
}

async function terminalLink(agentId, terminal) {
  try {
    const sessions = await api('/v1/terminal/sessions');
    // By agent id; else by tmux name, only when one session has it (names repeat across hosts).
    const named = sessions.filter((s) => s.tmuxSessionName === terminal.tmuxSession);
    const session = sessions.find((s) => s.agentId === agentId) ?? (named.length === 1 ? named[0] : null);
    // A page load of its own, not a route: the terminal view has its own Content-Security-Policy.
    return session ? h('a', { href: `/terminal/${encodeURIComponent(session.sessionId)}` }, `Watch ${session.displayName}`) : null;
  } catch {
    return null;
  }
}
