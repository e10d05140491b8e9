// The overview: swarms, agents by status, active incidents, pending gates (GET /v1/overview and
// GET /v1/approval-gates), refreshed every 10 s.
import { api } from '../api.js';
import { h, replace, link, badge, table, when, percent } from '../dom.js';

export async function render(main) {
  let stopped = false;
  const load = async () => {
    const [overview, gates] = await Promise.all([
      api('/v1/overview'),
      api('/v1/approval-gates?status=pending&limit=20').catch(() => null),
    ]);
    if (stopped) return; // the reader has moved on while this was loading
    const cards = overview.summaryCards;
    const incidents = overview.activeIncidents ?? [];
    // Without health-monitor's answer in time, the list is its last one (or none): say so.
    const stale = overview.healthStale
      ? h('p', { class: 'hint', id: 'incidents-stale' }, overview.healthAsOf
        ? ['Health-monitor did not answer in time: incidents as of ', when(overview.healthAsOf), '.']
        : 'Health-monitor has not answered: active incidents are unknown.')
      : null;
    replace(main,
      h('h1', {}, 'Overview'),
      h('section', { 'aria-labelledby': 'cards-heading' },
        h('h2', { id: 'cards-heading', class: 'visually-hidden' }, 'Summary'),
        h('div', { class: 'cards' },
          card('Active swarms', cards.activeSwarms),
          card('Agents', cards.agents),
          card('Events last hour', cards.eventsLastHour),
          card('Error rate', percent(cards.errorRate)),
          card('Active incidents', incidents.length),
          card('Pending gates', gates ? gates.gates.length : '—'))),
      h('section', { 'aria-labelledby': 'status-heading' },
        h('h2', { id: 'status-heading' }, 'Agents by status'),
        h('ul', { class: 'cards', id: 'agents-by-status' },
          Object.entries(cards.agentsByState ?? {}).map(([status, count]) => h('li', { class: 'card' }, badge(status), ' ', h('span', { class: 'value' }, count))))),
      h('section', { 'aria-labelledby': 'swarms-heading' },
        h('h2', { id: 'swarms-heading' }, 'Swarms'),
        table('Swarms', [
          ['Swarm', (s) => link(`/swarms/${encodeURIComponent(s.id)}`, s.name)],
          ['Status', (s) => badge(s.status)],
          ['Agents', (s) => `${s.activeAgents} active of ${s.totalAgents}`],
          ['Events last hour', (s) => s.eventsLastHour],
          ['Error rate', (s) => percent(s.errorRate)],
          ['Updated', (s) => when(s.updatedAt)],
        ], overview.activeSwarms, 'No active swarm.')),
      h('div', { class: 'grid-2' },
        h('section', { 'aria-labelledby': 'incidents-heading' },
          h('h2', { id: 'incidents-heading' }, 'Active incidents'),
          stale,
          table('Active incidents', [
            ['Incident', (i) => link(`/incidents/${encodeURIComponent(i.id)}`, i.summary)],
            ['Severity', (i) => badge(i.severity)],
            ['Since', (i) => when(i.createdAt)],
          ], incidents, 'No active incident.')),
        h('section', { 'aria-labelledby': 'gates-heading' },
          h('h2', { id: 'gates-heading' }, 'Pending gates'),
          gates ? table('Pending gates', [
            ['Gate', (g) => link(`/gates/${encodeURIComponent(g.gateId)}`, g.summary)],
            ['Risk', (g) => badge(g.risk)],
            ['Agent', (g) => link(`/agents/${encodeURIComponent(g.agentId)}`, g.agentId)],
            ['Expires', (g) => when(g.expiresAt)],
          ], gates.gates, 'No gate waits for a decision.') : h('p', { class: 'empty' }, 'Approvals did not answer.'))),
      h('p', { class: 'hint' }, 'As of ', when(overview.generatedAt), '; refreshed every 10 seconds.'));
  };
  await load();
  // Not while the reader is on one of its links: a refresh would take their focus away.
  const timer = setInterval(() => {
    if (main.contains(document.activeElement) && document.activeElement !== main) return;
    load().catch(() => {});
  }, 10_000);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}

function card(label, value) {
  return h('div', { class: 'card' }, h('div', { class: 'value' }, value), h('div', { class: 'label' }, label));
}
