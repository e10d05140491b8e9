// A pipeline: its stages with status, tokens and cost, its gates, its artifacts to read or
// download, and controls (GET /v1/pipelines/{id}, …/artifacts; a pipeline is an agent of swarm
// `pipelines`, so pause, resume and terminate go through control-api).
import { api, apiText, seg, errorText } from '../api.js';
import { h, replace, link, badge, table, when, usd, facts } from '../dom.js';
import { current } from '../session.js';
import { controlButtons } from '../controls.js';

export async function render(main, [id]) {
  const [pipeline, { artifacts }] = await Promise.all([
    api(`/v1/pipelines/${seg(id)}`),
    api(`/v1/pipelines/${seg(id)}/artifacts`),
  ]);
  const viewer = h('section', { id: 'artifact-viewer', 'aria-live': 'polite' });
  const receipt = h('div', { class: 'receipt-box', 'aria-live': 'polite' });
  let url = null; // the download link of the artifact shown, released when another replaces it
  let left = false;
  const open = async (artifact) => {
    try {
      const text = await apiText(`/v1/pipelines/${seg(id)}/artifacts/${seg(artifact.artifactId)}`);
      if (left) return;
      if (url) URL.revokeObjectURL(url);
      url = URL.createObjectURL(new Blob([text], { type: 'text/markdown' }));
      replace(viewer,
        h('h2', {}, `Artifact: ${artifact.title}`),
        h('p', {}, h('a', { href: url, download: `${artifact.role}-${artifact.position}.md` }, 'Download as Markdown')),
        h('pre', { class: 'artifact', tabindex: '0', 'aria-label': `Text of ${artifact.title}` }, text));
    } catch (e) {
      replace(viewer, h('div', { class: 'error-box', role: 'alert' }, errorText(e)));
    }
  };
  const active = ['running', 'awaitingApproval'].includes(pipeline.status);
  replace(main,
    h('h1', {}, `Pipeline: ${pipeline.title}`),
    facts([
      ['Id', pipeline.pipelineId],
      ['Status', [badge(pipeline.status), pipeline.paused ? [' ', badge('paused')] : '']],
      ['Goal', pipeline.goal],
      ['Mode', pipeline.unattended ? 'unattended (each stage approved as it ends)' : 'attended (a gate after each stage)'],
      ['Cost', usd(pipeline.costUsd)],
      ['Planner', pipeline.planner ? `${pipeline.planner.model}, ${usd(pipeline.planner.costUsd)}` : undefined],
      ['Created', when(pipeline.createdAt)],
      ['Finished', pipeline.finishedAt ? when(pipeline.finishedAt) : undefined],
      ['Error', pipeline.error ? `${pipeline.error.code}: ${pipeline.error.message}` : undefined],
      ['In the fleet', link(`/agents/${encodeURIComponent(pipeline.pipelineId)}`, 'as an agent of swarm pipelines')],
    ]),
    active ? controlButtons('agents', pipeline.pipelineId, receipt, current()) : null,
    receipt,
    h('h2', {}, 'Stages'),
    table('Stages', [
      ['#', (s) => s.position],
      ['Role', (s) => s.role],
      ['Task', (s) => s.task],
      ['Status', (s) => [badge(s.status), s.attempt > 1 ? ` attempt ${s.attempt}` : '']],
      ['Tokens', (s) => (s.usage ? `${s.usage.inputTokens} in, ${s.usage.outputTokens} out (${s.usage.model})` : '')],
      ['Cost', (s) => (s.usage ? usd(s.usage.costUsd) : '')],
      ['Time', (s) => (s.durationMs === undefined ? '' : `${(s.durationMs / 1000).toFixed(1)} s`)],
      ['Gate', (s) => [s.gateId ? link(`/gates/${encodeURIComponent(s.gateId)}`, 'gate') : '', s.decidedBy ? ` ${s.decidedBy}` : '', s.reason ? `: ${s.reason}` : '']],
      ['Fetches', (s) => s.fetches.map((f) => h('div', {}, badge(f.status), ` ${f.url}`))],
    ], pipeline.stages),
    h('h2', {}, 'Artifacts'),
    table('Artifacts', [
      ['Artifact', (a) => h('button', { type: 'button', class: 'secondary', 'data-artifact': a.artifactId, onclick: () => open(a) }, `Read ${a.title}`)],
      ['Stage', (a) => `${a.position} (${a.role}), attempt ${a.attempt}`],
      ['Size', (a) => `${a.bytes} bytes`],
      ['Created', (a) => when(a.createdAt)],
    ], artifacts, 'No artifact yet.'),
    viewer);
  return () => {
    left = true;
    if (url) URL.revokeObjectURL(url);
  };
}
