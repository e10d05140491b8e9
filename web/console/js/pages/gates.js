// The approval inbox: pending gates first, then the other statuses (GET /v1/approval-gates).
import { api, withQuery } from '../api.js';
import { h, replace, link, badge, table, when } from '../dom.js';

const STATUSES = ['pending', 'decided', 'expired', 'cancelled', 'all'];

export async function render(main, _params, query) {
  const status = STATUSES.includes(query.get('status')) ? query.get('status') : 'pending';
  const page = await api(withQuery('/v1/approval-gates', { status, limit: 50, cursor: query.get('cursor') }));
  replace(main,
    h('h1', {}, 'Approvals'),
    h('nav', { 'aria-label': 'Gate status', class: 'actions' },
      STATUSES.map((s) => link(`/gates?status=${s}`, s === status ? h('strong', { 'aria-current': 'true' }, s) : s))),
    table('Approval gates', [
      ['Gate', (g) => link(`/gates/${encodeURIComponent(g.gateId)}`, g.summary)],
      ['Risk', (g) => badge(g.risk)],
      ['Status', (g) => badge(g.status)],
      ['Agent', (g) => link(`/agents/${encodeURIComponent(g.agentId)}`, g.agentId)],
      ['Tool', (g) => g.tool ?? ''],
      ['Requested', (g) => when(g.requestedAt)],
      [status === 'pending' ? 'Expires' : 'Decided', (g) => when(status === 'pending' ? g.expiresAt : g.decidedAt)],
    ], page.gates, status === 'pending' ? 'No gate waits for a decision.' : 'None.'),
    page.nextCursor ? h('p', {}, link(withQuery('/gates', { status, cursor: page.nextCursor }), 'Older gates')) : null);
}
