// One agent session (seed 000's session.webUrl): its context window over its latest requests,
// the incidents about it, its agent's newest events (GET /v1/context-health/{id}, /v1/incidents,
// /v1/agents/{id}/events, /v1/stream).
import { api, seg, withQuery } from '../api.js';
import { h, replace, link, badge, table, when, facts, percent, sparkline } from '../dom.js';
import { lastEvents } from '../live.js';

export async function render(main, [id]) {
  const session = await api(`/v1/context-health/${seg(id)}`);
  const [incidents, recent] = await Promise.all([
    // Incidents name their session; the list is per swarm, so this session's are picked out.
    api(withQuery('/v1/incidents', { status: 'all', swarmId: session.swarmId, limit: 200 }))
      .then(({ incidents }) => incidents.filter((i) => i.sessionId === session.sessionId))
      .catch(() => []),
    api(`/v1/agents/${seg(session.agentId)}/events?limit=50`).catch(() => null),
  ]);
  const { section, stream } = lastEvents({ agentIds: [session.agentId] }, { initial: recent?.events ?? [] });
  const series = session.series ?? [];
  replace(main,
    h('h1', {}, `Session ${session.sessionId}`),
    facts([
      ['Agent', link(`/agents/${encodeURIComponent(session.agentId)}`, session.agentId)],
      ['Swarm', link(`/swarms/${encodeURIComponent(session.swarmId)}`, session.swarmId)],
      ['Model', session.model],
      ['Context used', `${percent(session.percentUsed / 100)} of ${session.maxTokens} tokens (${session.tokenUsage})`],
      ['Tokens', sparkline(series.map((p) => p.tokens), `Context tokens of session ${session.sessionId}`)],
      ['Redundancy', Number(session.redundancyScore).toFixed(2)],
      ['Compactions', session.compactions],
      ['Warnings', session.warnings.length ? session.warnings.map((w) => badge(w)) : 'none'],
      ['Updated', when(session.updatedAt)],
    ]),
    h('section', { 'aria-labelledby': 'session-incidents-heading' },
      h('h2', { id: 'session-incidents-heading' }, 'Incidents'),
      table('Incidents of this session', [
        ['Incident', (i) => link(`/incidents/${encodeURIComponent(i.id)}`, i.summary)],
        ['Status', (i) => badge(i.status)],
        ['Since', (i) => when(i.createdAt)],
      ], incidents, 'No incident about this session.')),
    section);
  return () => stream.close();
}
