// Context and skill health with sparklines (health-monitor's series), for the agent and swarm
// pages.
import { api, seg, withQuery } from './api.js';
import { h, table, sparkline, percent, link } from './dom.js';

/** The context sessions of an agent (or a swarm), each with its token sparkline. */
export async function contextHealth(params) {
  const { sessions } = await api(withQuery('/v1/context-health', { ...params, limit: 10 }));
  const series = await Promise.all(sessions.map((s) =>
    api(`/v1/context-health/${seg(s.sessionId)}`).then((d) => d.series ?? []).catch(() => [])));
  return h('section', { 'aria-labelledby': 'context-heading' },
    h('h2', { id: 'context-heading' }, 'Context health'),
    table('Context health', [
      ['Session', (s) => link(`/sessions/${encodeURIComponent(s.sessionId)}`, s.sessionId)],
      ['Used', (s) => `${percent(s.percentUsed / 100)} of ${s.maxTokens} tokens`],
      ['Tokens', (s) => sparkline(series[sessions.indexOf(s)].map((p) => p.tokens), `Context tokens of session ${s.sessionId}`)],
      ['Redundancy', (s) => Number(s.redundancyScore).toFixed(2)],
      ['Compactions', (s) => s.compactions],
      ['Warnings', (s) => s.warnings.join(', ') || 'none'],
    ], sessions, 'No context reported.'));
}

/** Skills (of a swarm, or the given ones), worst first, each with its error-rate sparkline. */
export async function skillHealth({ swarmId, skills }) {
  let list = skills;
  if (!list) list = (await api(withQuery('/v1/skill-health', { swarmId, limit: 8 }))).skills;
  const details = await Promise.all(list.map((s) =>
    api(`/v1/skill-health/${seg(s.skillId)}?window=1h`).catch(() => null)));
  return h('section', { 'aria-labelledby': 'skills-heading' },
    h('h2', { id: 'skills-heading' }, 'Skill health (last hour)'),
    table('Skill health', [
      ['Skill', (s) => s.name],
      ['Calls', (s) => s.calls],
      ['Error rate', (s) => percent(s.errorRate)],
      ['Errors per 5 min', (s) => sparkline((details[list.indexOf(s)]?.series ?? []).map((p) => p.errors), `Errors of ${s.name} per 5 minutes`)],
      ['p95', (s) => (s.p95LatencyMs === undefined ? '' : `${Math.round(s.p95LatencyMs)} ms`)],
      ['Incidents', (s) => (details[list.indexOf(s)]?.incidents ?? []).filter((i) => i.status === 'firing')
        .map((i) => link(`/incidents/${encodeURIComponent(i.id)}`, i.rule))],
    ], list, 'No tool calls reported.'));
}
