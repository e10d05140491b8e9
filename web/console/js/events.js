// How an event frame of the stream reads in a list, and the notices (gap, suppressed) that must
// be shown, not hidden.
import { h, link } from './dom.js';

/** One line of text for an event frame (docs/stream-protocol.md, docs/ingest.md). */
export function describe(frame) {
  switch (frame.type) {
    case 'log':
      return frame.message ?? '';
    case 'state':
      return `state ${frame.state}${frame.taskSummary ? `: ${frame.taskSummary}` : ''}`;
    case 'toolCall':
      return `${frame.tool} ${frame.ok ? 'ok' : `failed${frame.error ? `: ${frame.error}` : ''}`}${frame.latencyMs !== undefined ? ` (${frame.latencyMs} ms)` : ''}`;
    case 'usage':
      return `${frame.model ?? 'usage'}: ${frame.inputTokens} in, ${frame.outputTokens} out${frame.costUsd !== undefined ? `, $${Number(frame.costUsd).toFixed(4)}` : ''}`;
    case 'metric':
      return `${frame.name} = ${frame.value}${frame.unit ? ` ${frame.unit}` : ''}`;
    case 'traceEvent':
      return `span ${frame.name}${frame.durationMs !== undefined ? ` (${frame.durationMs} ms)` : ''}${frame.status ? ` ${frame.status}` : ''}`;
    case 'approvalGate':
      return `gate ${frame.gateId} ${frame.status}: ${frame.summary}`;
    case 'incident':
      return `incident ${frame.rule} ${frame.status}: ${frame.summary}`;
    case 'acp':
      return `acp ${frame.envelope?.direction ?? ''} ${frame.envelope?.kind ?? ''}`;
    default:
      return frame.type;
  }
}

/** A list item for an event frame. */
export function eventItem(frame) {
  const time = new Date(frame.ts ?? Date.now());
  return h('li', { class: `event sev-${frame.severity ?? 'info'}`, 'data-seq': frame.seq, 'data-type': frame.type, 'data-agent': frame.agentId ?? '' },
    h('time', { datetime: time.toISOString() }, time.toLocaleTimeString()), ' ',
    h('span', { class: 'event-type' }, frame.type), ' ',
    h('span', { class: 'event-agent' }, frame.agentId ?? frame.swarmId ?? ''), ' ',
    describe(frame),
    // A span of a W3C trace opens the trace's page (its spans across agents).
    frame.type === 'traceEvent' && /^[0-9a-f]{32}$/.test(frame.traceId ?? '')
      ? [' ', link(`/traces/${frame.traceId}`, 'trace')] : null);
}

/** A list item for a `gap`, `suppressed` or `error` notice; `resume` fetches a gap's events. */
export function noticeItem(frame, resume) {
  if (frame.type === 'gap') {
    return h('li', {
      class: 'notice notice-gap', role: 'note', 'data-notice': 'gap', 'data-seq': frame.toSeq,
      'data-from': frame.fromSeq, 'data-reason': frame.reason, 'data-resume-from': frame.resumeFrom,
    },
      frame.fromSeq === frame.toSeq ? `Gap: event ${frame.fromSeq} was not sent (${frame.reason}). ` : `Gap: events ${frame.fromSeq}–${frame.toSeq} were not sent (${frame.reason}). `,
      resume ? h('button', { type: 'button', class: 'secondary', onclick: () => resume(frame.resumeFrom) }, 'Fetch them') : null);
  }
  if (frame.type === 'suppressed') {
    return h('li', { class: 'notice notice-suppressed', role: 'note', 'data-notice': 'suppressed', 'data-seq': frame.toSeq },
      `Suppressed: ${frame.count} repeated log line(s) of ${frame.agentId} (events ${frame.fromSeq}–${frame.toSeq}).`);
  }
  return h('li', { class: 'notice notice-error', role: 'note', 'data-notice': 'error' },
    `Error: ${frame.error?.code ?? ''} ${frame.error?.message ?? ''}`);
}

/**
 * Shows a notice in `list`. A gap that continues the newest one shown (same reason, next seqs:
 * the rate cap skips events one by one) widens it instead of adding a line per event.
 */
export function addNotice(list, frame, resume, max = 500) {
  if (frame.type === 'gap') {
    const last = list.querySelector('li[data-notice=gap]');
    if (last && last.dataset.reason === frame.reason && Number(frame.fromSeq) === Number(last.dataset.seq) + 1 &&
        list.firstElementChild === last) {
      const merged = { ...frame, fromSeq: Number(last.dataset.from), resumeFrom: last.dataset.resumeFrom };
      last.replaceWith(noticeItem(merged, resume));
      return;
    }
  }
  prepend(list, noticeItem(frame, resume), max);
}

/** Adds `item` to `list` (newest first: by seq, notices at the top), keeping `max` items. */
export function prepend(list, item, max = 500) {
  const seq = Number(item.dataset.seq);
  let before = list.firstElementChild;
  if (Number.isFinite(seq)) {
    // Usually the newest, so the first event item it passes; a gap's fetched events go lower.
    while (before && (before.dataset.seq === undefined || Number(before.dataset.seq) > seq)) before = before.nextElementSibling;
  }
  list.insertBefore(item, before);
  while (list.children.length > max) list.lastElementChild.remove();
}
