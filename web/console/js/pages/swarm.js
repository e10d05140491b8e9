// A swarm: its agents and their status, its health, controls for all its agents, and its last
// events live (GET /v1/swarms/{id}, /v1/swarm-health, /v1/skill-health, /v1/stream).
import { api, seg } from '../api.js';
import { h, replace, link, badge, table, when, percent, facts, usd } from '../dom.js';
import { current } from '../session.js';
import { controlButtons } from '../controls.js';
import { skillHealth } from '../health.js';
import { lastEvents } from '../live.js';
import { agentStatus } from '../status.js';

export async function render(main, [id]) {
  const { swarm, agents } = await api(`/v1/swarms/${seg(id)}`);
  const health = (await api('/v1/swarm-health').catch(() => ({ swarms: [] }))).swarms.find((s) => s.swarmId === id);
  const statusCells = new Map();
  const receipt = h('div', { class: 'receipt-box', 'aria-live': 'polite' });
  const { section, stream } = lastEvents({ swarmIds: [id] }, {
    onEvent: (frame) => {
      if (frame.type === 'state' && statusCells.has(frame.agentId)) replace(statusCells.get(frame.agentId), badge(agentStatus(frame.state)));
    },
  });
  replace(main,
    h('h1', {}, `Swarm ${swarm.name}`),
    facts([
      ['Status', badge(swarm.status)],
      ['Agents', `${swarm.activeAgents} active of ${swarm.totalAgents}`],
      ['Events last hour', swarm.eventsLastHour],
      ['Error rate', percent(swarm.errorRate)],
      ['Updated', when(swarm.updatedAt)],
      ['Health', health ? [badge(health.status), ` ${health.eventsPerMinute} events/min, ${health.stuckAgents} stuck, ${usd(health.costPerHourUsd)}/h`] : undefined],
    ]),
    controlButtons('swarms', id, receipt, current()),
    receipt,
    h('section', { 'aria-labelledby': 'agents-heading' },
      h('h2', { id: 'agents-heading' }, 'Agents'),
      table('Agents', [
        ['Agent', (a) => link(`/agents/${encodeURIComponent(a.id)}`, a.id)],
        ['Status', (a) => {
          const cell = h('span', { 'data-agent-status': a.id }, badge(a.state));
          statusCells.set(a.id, cell);
          return cell;
        }],
        ['Task', (a) => a.taskSummary ?? ''],
        ['Errors last hour', (a) => `${a.errorsLastHour} of ${a.eventsLastHour} (${percent(a.errorRate)})`],
        ['Last seen', (a) => when(a.lastSeenAt)],
      ], agents, 'No agent has reported.')),
    await skillHealth({ swarmId: id }).catch((e) => h('p', { class: 'error-box' }, e.message)),
    section);
  return () => stream.close();
}
