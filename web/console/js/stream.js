// The live stream (/v1/stream, docs/stream-protocol.md) for pages: one WebSocket, one
// subscription, resumed after every reconnect from the last event seen (lastEventId), so nothing
// is missed or shown twice. The token rides in a subprotocol, never in the URL.
import { accessToken, AuthError } from './session.js';

const APP_PROTOCOL = 'swarmdeck.v1';

export function socketURL(path) {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${scheme}//${location.host}${path}`;
}

/** Opens a WebSocket to `path` with the session's token as a subprotocol. */
export async function openSocket(path) {
  const token = await accessToken();
  return new WebSocket(socketURL(path), [APP_PROTOCOL, `swarmdeck.bearer.${token}`]);
}

/**
 * Opens `path` for `owner`, a page's connection that survives reconnects (its `closed`,
 * `onStatus(text)` and `retry(why)`): the socket, or null when there is none to use (signed
 * out, to be retried, or the page left meanwhile).
 */
export async function openFor(owner, path) {
  owner.onStatus('connecting');
  let socket;
  try {
    socket = await openSocket(path);
  } catch (error) {
    if (error instanceof AuthError) {
      owner.onStatus(`signed out: ${error.message}`);
      return null;
    }
    // The token could not be refreshed for now (offline, the server busy): try again later.
    owner.retry(`not connected (${error.message})`);
    return null;
  }
  if (owner.closed) {
    // Closed while the token was being fetched: this socket was never the page's.
    socket.close(1000, 'page left');
    return null;
  }
  return socket;
}

/** The wait before reconnect number `attempt`: 0.5 s doubling to 30 s, with jitter. */
export function backoff(attempt) {
  return Math.min(30_000, 500 * 2 ** Math.min(attempt, 6)) * (0.5 + Math.random() / 2);
}

/**
 * A subscription that survives reconnects. Handlers: onEvent(frame), onNotice(frame) for `gap`,
 * `suppressed` and `error`, onStatus(text) for the connection's state.
 */
export class LiveStream {
  constructor(filters, { onEvent, onNotice = () => {}, onStatus = () => {}, lastEventId, history = 0, options = {} } = {}) {
    this.filters = filters;
    // `history`: on the first connection, also replay the events of the last `history` seqs of
    // the tenant (the page's "last events"). `options`: maxEventsPerSecond, collapseRepeats.
    this.history = lastEventId === undefined ? history : 0;
    this.options = options;
    this.onEvent = onEvent;
    this.onNotice = onNotice;
    this.onStatus = onStatus;
    this.lastEventId = lastEventId;
    this.closed = false;
    // Seqs already handed to onEvent: fetching a gap's events replays those after it too.
    this.shown = new Set();
    this.attempt = 0;
    this.reconnects = 0;
    this.connect();
  }

  async connect() {
    if (this.closed) return;
    const socket = await openFor(this, '/v1/stream?protocol=1');
    if (!socket) return;
    this.socket = socket;
    socket.addEventListener('open', () => this.subscribe(socket, this.lastEventId));
    socket.addEventListener('message', (message) => this.receive(socket, message.data));
    socket.addEventListener('close', (event) => {
      if (this.socket !== socket || this.closed) return;
      this.retry(`disconnected (${event.code || 'no code'}${event.reason ? `: ${event.reason}` : ''})`, event.code === 1013 ? 5000 : undefined);
    });
  }

  /** Connects again after a back-off (0.5 s doubling to 30 s, with jitter), or after `delay`. */
  retry(why, delay) {
    if (this.closed) return;
    this.attempt += 1;
    this.reconnects += 1;
    this.onStatus(`${why}; reconnecting`);
    this.timer = setTimeout(() => this.connect(), delay ?? backoff(this.attempt));
  }

  subscribe(socket, lastEventId) {
    const message = { type: 'subscribe', requestId: crypto.randomUUID(), filters: this.filters, batchEvents: true, ...this.options };
    if (lastEventId !== undefined) message.lastEventId = String(lastEventId);
    socket.send(JSON.stringify(message));
  }

  /** Subscribes again from `lastEventId` (a gap's resumeFrom), on the open connection. */
  resumeFrom(lastEventId) {
    if (this.socket?.readyState !== WebSocket.OPEN) return;
    this.lastEventId = lastEventId;
    this.subscribe(this.socket, lastEventId);
  }

  receive(socket, data) {
    let parsed;
    try {
      parsed = JSON.parse(data);
    } catch {
      return;
    }
    for (const frame of Array.isArray(parsed) ? parsed : [parsed]) {
      switch (frame.type) {
        case 'subscribed':
          this.attempt = 0;
          if (this.history > 0) {
            // The present is known now: replay from `history` seqs before it. Events until this
            // second acknowledgement come again in its replay, so they are skipped.
            const from = Math.max(0, Number(frame.headSeq) - this.history);
            this.history = 0;
            this.priming = true;
            this.lastEventId ??= from; // a drop before the replay resumes from here
            this.subscribe(socket, from);
            break;
          }
          this.priming = false;
          // Resume from here even if no event arrives before a drop (a quiet filter).
          this.lastEventId ??= Number(frame.fromSeq) - 1;
          this.onStatus(this.reconnects ? `live (resumed after event ${this.lastEventId ?? 'none'})` : 'live');
          break;
        case 'ping':
          socket.send('{"type":"pong"}');
          break;
        case 'gap':
        case 'suppressed':
        case 'error':
          this.onNotice(frame);
          break;
        case 'unsubscribed':
        case 'throttled':
          break;
        default:
          if (this.priming || this.shown.has(frame.seq)) break;
          if (frame.seq !== undefined) {
            this.lastEventId = Math.max(Number(this.lastEventId ?? 0), Number(frame.seq));
            this.shown.add(frame.seq);
            if (this.shown.size > 10_000) this.shown.delete(this.shown.values().next().value);
          }
          this.onEvent(frame);
      }
    }
  }

  /** Drops the connection, as a network failure would (the next one resumes). */
  drop() {
    this.socket?.close(4000, 'dropped');
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    this.socket?.close(1000, 'page left');
  }
}
