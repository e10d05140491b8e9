// The live timeline: the tenant's events as they happen, filtered, resumed after every
// reconnect from the last event shown, with the stream's gap and suppressed notices in line.
import { h, replace } from '../dom.js';
import { LiveStream } from '../stream.js';
import { replaceQuery } from '../app.js';
import { streamStatus } from '../live.js';
import { eventItem, addNotice, prepend } from '../events.js';

const KINDS = [['states', 'States'], ['logs', 'Logs'], ['toolCalls', 'Tool calls'], ['usage', 'Usage'], ['metrics', 'Metrics'],
  ['traceEvents', 'Spans'], ['approvals', 'Approval gates'], ['incidents', 'Incidents'], ['acp', 'ACP']];
const SEVERITIES = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];
const RATES = ['1', '5', '20', '200', '1000'];

export async function render(main, _params, query) {
  const list = h('ol', { class: 'events', id: 'timeline-events', 'aria-label': 'Events, newest first' });
  const status = streamStatus('stream-status');
  const counts = h('p', { class: 'hint', id: 'timeline-counts' });
  const ids = (name) => (query.get(name) ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const include = ids('include');
  const field = (id, label, control, hint) => h('div', { class: 'field' }, h('label', { for: id }, label), control, hint ? h('p', { class: 'hint' }, hint) : null);
  const swarm = h('input', { id: 'filter-swarm', name: 'swarm', value: query.get('swarm') ?? '', placeholder: 'all' });
  const agent = h('input', { id: 'filter-agent', name: 'agent', value: query.get('agent') ?? '', placeholder: 'all' });
  const severity = h('select', { id: 'filter-severity', name: 'severity' },
    h('option', { value: '' }, 'any'),
    SEVERITIES.map((s) => h('option', { value: s, selected: query.get('severity') === s }, `${s} and above`)));
  const rate = h('select', { id: 'filter-rate', name: 'rate' },
    RATES.map((r) => h('option', { value: r, selected: (query.get('rate') ?? '200') === r }, `${r} per second`)));
  const collapse = h('input', { type: 'checkbox', id: 'filter-collapse', name: 'collapse', checked: query.get('collapse') === '1' });
  const form = h('form', { class: 'timeline-filters', id: 'timeline-filters', 'aria-label': 'Filters' },
    field('filter-swarm', 'Swarms (comma-separated)', swarm),
    field('filter-agent', 'Agents (comma-separated)', agent),
    field('filter-severity', 'Severity', severity),
    h('fieldset', {}, h('legend', {}, 'Kinds (none: all)'),
      KINDS.map(([value, label]) => h('label', { class: 'check' },
        h('input', { type: 'checkbox', name: 'include', value, checked: include.includes(value) }), ` ${label} `))),
    field('filter-rate', 'At most', rate),
    h('div', { class: 'field' }, h('label', { for: 'filter-collapse' }, collapse, ' Collapse repeated log lines')),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Apply')));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    if (swarm.value.trim()) next.set('swarm', swarm.value.trim());
    if (agent.value.trim()) next.set('agent', agent.value.trim());
    if (severity.value) next.set('severity', severity.value);
    const kinds = [...form.querySelectorAll('input[name=include]:checked')].map((c) => c.value);
    if (kinds.length) next.set('include', kinds.join(','));
    if (rate.value !== '200') next.set('rate', rate.value);
    if (collapse.checked) next.set('collapse', '1');
    replaceQuery(next.toString());
    start(next);
  });
  replace(main, h('h1', {}, 'Timeline'), form, status.el, counts, list);

  let stream = null;
  let shown = 0, notices = 0;
  const start = (q) => {
    stream?.close();
    replace(list);
    shown = notices = 0;
    const get = (name) => (q.get(name) ?? '').split(',').map((s) => s.trim()).filter(Boolean);
    const filters = {};
    if (get('swarm').length) filters.swarmIds = get('swarm');
    if (get('agent').length) filters.agentIds = get('agent');
    if (q.get('severity')) filters.severityGte = q.get('severity');
    if (get('include').length) filters.include = get('include');
    const count = () => (counts.textContent = `${shown} events, ${notices} notices shown; the newest 500 are kept.`);
    stream = new LiveStream(filters, {
      history: 200,
      options: { maxEventsPerSecond: Number(q.get('rate') ?? 200), collapseRepeats: q.get('collapse') === '1' },
      onEvent: (frame) => {
        shown += 1;
        prepend(list, eventItem(frame));
        count();
      },
      onNotice: (frame) => {
        notices += 1;
        addNotice(list, frame, (from) => stream.resumeFrom(from));
        count();
      },
      onStatus: status.update,
    });
  };
  start(query);
  return () => stream?.close();
}
