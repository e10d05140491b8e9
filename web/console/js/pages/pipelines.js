// Pipelines, newest first (GET /v1/pipelines, paged).
import { api, withQuery } from '../api.js';
import { h, replace, link, badge, table, when, usd } from '../dom.js';

export async function render(main, _params, query) {
  const page = await api(withQuery('/v1/pipelines', { limit: 50, before: query.get('before') }));
  replace(main,
    h('h1', {}, 'Pipelines'),
    table('Pipelines', [
      ['Pipeline', (p) => link(`/pipelines/${encodeURIComponent(p.pipelineId)}`, p.title)],
      ['Status', (p) => [badge(p.status), p.paused ? [' ', badge('paused')] : '']],
      ['Stages', (p) => p.stageCount],
      ['Cost', (p) => usd(p.costUsd)],
      ['Mode', (p) => (p.unattended ? 'unattended' : 'attended')],
      ['Created', (p) => when(p.createdAt)],
    ], page.pipelines, 'No pipeline yet.'),
    page.nextBefore ? h('p', {}, link(withQuery('/pipelines', { before: page.nextBefore }), 'Older pipelines')) : null);
}
