// Incidents, firing or resolved (GET /v1/incidents, paged).
import { api, withQuery } from '../api.js';
import { h, replace, link, badge, table, when } from '../dom.js';

export async function render(main, _params, query) {
  const status = ['firing', 'resolved', 'all'].includes(query.get('status')) ? query.get('status') : 'firing';
  const page = await api(withQuery('/v1/incidents', { status, limit: 50, cursor: query.get('cursor') }));
  replace(main,
    h('h1', {}, 'Incidents'),
    h('nav', { 'aria-label': 'Incident status', class: 'actions' },
      ['firing', 'resolved', 'all'].map((s) => link(`/incidents?status=${s}`, s === status ? h('strong', { 'aria-current': 'true' }, s) : s))),
    table('Incidents', [
      ['Incident', (i) => link(`/incidents/${encodeURIComponent(i.id)}`, i.summary)],
      ['Rule', (i) => i.rule],
      ['Severity', (i) => badge(i.severity)],
      ['Status', (i) => badge(i.status)],
      ['Where', (i) => [i.swarmId ? link(`/swarms/${encodeURIComponent(i.swarmId)}`, i.swarmId) : '', i.agentId ? [' / ', link(`/agents/${encodeURIComponent(i.agentId)}`, i.agentId)] : '']],
      ['Since', (i) => when(i.createdAt)],
      ['Acknowledged', (i) => (i.acknowledged ? 'yes' : 'no')],
    ], page.incidents, `No ${status === 'all' ? '' : `${status} `}incident.`),
    page.nextCursor ? h('p', {}, link(withQuery('/incidents', { status, cursor: page.nextCursor }), 'Older incidents')) : null);
}
