// A page's "last events" section: recent events replayed, then live, with the gap and
// suppressed notices in line.
import { h } from './dom.js';
import { LiveStream } from './stream.js';
import { eventItem, addNotice, prepend } from './events.js';

/** A status line for a stream: its text, and its first word as `data-state` (for tests and styles). */
export function streamStatus(id) {
  const el = h('p', { class: 'stream-status', id, role: 'status' }, 'connecting');
  const update = (text) => {
    el.textContent = `Stream: ${text}`;
    el.dataset.state = text.split(' ')[0];
  };
  return { el, update };
}

/** The section and its stream; `onEvent` also sees every event (e.g. to update a status).
 * `initial`: frames already read (oldest first, e.g. an agent's newest events), shown at once;
 * the stream's own replay then adds only what is newer. */
export function lastEvents(filters, { onEvent = () => {}, history = 3000, max = 100, initial = [] } = {}) {
  const list = h('ol', { class: 'events', 'aria-label': 'Events, newest first', reversed: true });
  for (const frame of initial) prepend(list, eventItem(frame), max);
  const shown = initial.length ? Number(initial[initial.length - 1].seq) : 0;
  const status = streamStatus();
  const stream = new LiveStream(filters, {
    history,
    onEvent: (frame) => {
      if (frame.seq !== undefined && Number(frame.seq) <= shown) return;
      prepend(list, eventItem(frame), max);
      onEvent(frame);
    },
    onNotice: (frame) => addNotice(list, frame, (from) => stream.resumeFrom(from), max),
    onStatus: status.update,
  });
  const section = h('section', { 'aria-labelledby': 'events-heading' }, h('h2', { id: 'events-heading' }, 'Last events'), status.el, list);
  return { section, stream };
}
