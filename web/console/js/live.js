// A page's "last events" section: recent events replayed, then live, with the gap and
// suppressed notices in line.
import { h } from './dom.js';
import { LiveStream } from './stream.js';
import { eventItem, addNotice, prepend } from './events.js';

/** The section and its stream; `onEvent` also sees every event (e.g. to update a status). */
export function lastEvents(filters, { onEvent = () => {}, history = 3000, max = 100 } = {}) {
  const list = h('ol', { class: 'events', 'aria-label': 'Events, newest first', reversed: true });
  const status = h('p', { class: 'stream-status', role: 'status' }, 'connecting');
  const stream = new LiveStream(filters, {
    history,
    onEvent: (frame) => {
      prepend(list, eventItem(frame), max);
      onEvent(frame);
    },
    onNotice: (frame) => addNotice(list, frame, (from) => stream.resumeFrom(from), max),
    onStatus: (text) => {
      status.textContent = `Stream: ${text}`;
      status.dataset.state = text.split(' ')[0];
    },
  });
  const section = h('section', { 'aria-labelledby': 'events-heading' }, h('h2', { id: 'events-heading' }, 'Last events'), status, list);
  return { section, stream };
}
