// The ACP cache (/v1/acp, docs/stream-protocol.md "ACP cache" and "Talking to the agent") for
// pages: one WebSocket of JSON-RPC 2.0, requests answered by id, a thread followed live from its
// cursor and resumed after every reconnect from the last seq seen, so nothing is missed or shown
// twice. The token rides in a subprotocol, never in the URL.
import { openFor, backoff } from './stream.js';

export class ACPConnection {
  /**
   * Follows `thread` (when given) live. Handlers: onEnvelope(envelope) in seq order, once each;
   * onNotice(message) for the cache's notifications (acp.cache.sent, acp.cache.expired) and
   * refusals; onStatus(text).
   */
  constructor({ thread, onEnvelope = () => {}, onNotice = () => {}, onStatus = () => {} } = {}) {
    this.thread = thread;
    this.onEnvelope = onEnvelope;
    this.onNotice = onNotice;
    this.onStatus = onStatus;
    this.lastSeq = 0;
    this.nextID = 1;
    this.waiting = new Map();
    this.closed = false;
    this.attempt = 0;
    this.ready = new Promise((resolve) => (this.opened = resolve));
    this.connect();
  }

  async connect() {
    if (this.closed) return;
    const socket = await openFor(this, '/v1/acp?protocol=1');
    if (!socket) return;
    this.socket = socket;
    socket.addEventListener('open', async () => {
      this.attempt = 0;
      this.opened();
      if (!this.thread) {
        this.onStatus('connected');
        return;
      }
      try {
        await this.request('acp.cache.subscribe', { thread_id: this.thread, from_seq: this.lastSeq + 1 });
        this.onStatus('live');
      } catch (error) {
        this.onStatus(`not subscribed: ${error.message}`);
      }
    });
    socket.addEventListener('message', (message) => this.receive(message.data));
    socket.addEventListener('close', (event) => {
      if (this.socket !== socket || this.closed) return;
      for (const [, { reject }] of this.waiting) reject(new Error('disconnected'));
      this.waiting.clear();
      this.ready = new Promise((resolve) => (this.opened = resolve));
      this.retry(`disconnected (${event.code || 'no code'}${event.reason ? `: ${event.reason}` : ''})`);
    });
  }

  /** Connects again after a back-off (0.5 s doubling to 30 s, with jitter). */
  retry(why) {
    if (this.closed) return;
    this.attempt += 1;
    this.onStatus(`${why}; reconnecting`);
    this.timer = setTimeout(() => this.connect(), backoff(this.attempt));
  }

  /** Calls a cache method; resolves with its result, rejects with its error. */
  async request(method, params) {
    await this.ready;
    const id = `c-${this.nextID++}`;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.socket.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  /** Sends an ACP frame for the agent (a prompt, a cancel, an answer). */
  async send(frame) {
    await this.ready;
    this.socket.send(JSON.stringify({ jsonrpc: '2.0', ...frame }));
  }

  receive(data) {
    let message;
    try {
      message = JSON.parse(data);
    } catch {
      return;
    }
    if (message.thread_id !== undefined && message.direction !== undefined) {
      if (message.thread_id !== this.thread || message.seq <= this.lastSeq) return;
      this.lastSeq = message.seq;
      this.onEnvelope(message);
      return;
    }
    const waiter = message.id !== undefined && message.id !== null ? this.waiting.get(message.id) : undefined;
    if (waiter) {
      this.waiting.delete(message.id);
      if (message.error) waiter.reject(new Error(message.error.message));
      else waiter.resolve(message.result);
      return;
    }
    this.onNotice(message);
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    this.socket?.close(1000, 'page left');
  }
}
