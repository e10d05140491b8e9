// One incident with its timeline, and acknowledging it (GET /v1/incidents/{id},
// POST /v1/incidents/{id}/acknowledge).
import { api, seg, errorText } from '../api.js';
import { h, replace, link, badge, table, when, facts } from '../dom.js';
import { current } from '../session.js';
import { announce, refresh } from '../app.js';

export async function render(main, [id]) {
  const { incident, timeline } = await api(`/v1/incidents/${seg(id)}`);
  const canAck = current().scopes.includes('agents:control') || current().scopes.includes('admin');
  const reason = h('input', { id: 'ack-reason', required: true, maxlength: 1000, value: '' });
  const error = h('div', { class: 'error-box', role: 'alert', hidden: true });
  const ack = h('form', { class: 'stacked', id: 'ack-form' },
    h('label', { for: 'ack-reason' }, 'Why you acknowledge it'),
    reason,
    error,
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Acknowledge')));
  ack.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      await api(`/v1/incidents/${seg(id)}/acknowledge`, { method: 'POST', body: { reason: reason.value.trim() } });
      announce('Incident acknowledged');
      await refresh();
    } catch (e) {
      error.hidden = false;
      error.textContent = errorText(e);
    }
  });
  replace(main,
    h('h1', {}, `Incident: ${incident.summary}`),
    facts([
      ['Id', incident.id],
      ['Status', badge(incident.status)],
      ['Severity', badge(incident.severity)],
      ['Rule', incident.rule],
      ['Swarm', incident.swarmId ? link(`/swarms/${encodeURIComponent(incident.swarmId)}`, incident.swarmId) : undefined],
      ['Agent', incident.agentId ? link(`/agents/${encodeURIComponent(incident.agentId)}`, incident.agentId) : undefined],
      ['Session', incident.sessionId],
      ['Since', when(incident.createdAt)],
      ['Resolved', incident.resolvedAt ? when(incident.resolvedAt) : undefined],
      ['Acknowledged', incident.acknowledged ? [`by ${incident.acknowledgedBy} `, when(incident.acknowledgedAt), incident.acknowledgeReason ? `: ${incident.acknowledgeReason}` : ''] : 'no'],
    ]),
    !incident.acknowledged && canAck ? ack : null,
    h('h2', {}, 'Timeline'),
    table('Incident timeline', [
      ['When', (t) => when(t.at)],
      ['What', (t) => t.action],
      ['Who', (t) => t.actor],
      ['Detail', (t) => t.detail ?? ''],
    ], timeline));
}
