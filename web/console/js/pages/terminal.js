// The terminal view: a tmux session through terminal-broker's WebSocket
// (docs/terminal-protocol.md), drawn by term.js (Debian's libjs-term.js, which the stack's
// install step puts on the edge). Read-only unless the reader turns input on, which needs the
// terminal:write scope; every attach with input is audited by the broker.
import { api, seg } from '../api.js';
import { h, replace, facts, badge } from '../dom.js';
import { current } from '../session.js';
import { openSocket } from '../stream.js';

let loading = null;
function loadTermJS() {
  loading ??= new Promise((resolve, reject) => {
    const script = h('script', { src: '/console/vendor/term.js/term.js' });
    script.addEventListener('load', () => resolve(window.Terminal));
    script.addEventListener('error', () => reject(new Error('The terminal library (libjs-term.js) is not installed on the edge.')));
    document.head.append(script);
  });
  return loading;
}

export async function render(main, [id]) {
  const [info, Terminal] = await Promise.all([api(`/v1/terminal/sessions/${seg(id)}`), loadTermJS()]);
  const canWrite = current().scopes.includes('terminal:write');
  const status = h('p', { class: 'stream-status', id: 'terminal-status', role: 'status' }, 'connecting');
  const screen = h('div', { class: 'terminal-host', id: 'terminal-screen', role: 'region', 'aria-label': `Terminal ${info.displayName}` });
  const inputToggle = h('input', { type: 'checkbox', id: 'terminal-input', disabled: !canWrite });
  replace(main,
    h('h1', {}, `Terminal: ${info.displayName}`),
    facts([
      ['tmux session', info.tmuxSessionName],
      ['Host', `${info.username}@${info.hostnameOrIP}:${info.port}`],
      ['Agent', info.agentId],
      ['Status', badge(info.status)],
    ]),
    h('div', { class: 'field' },
      h('label', { for: 'terminal-input' }, inputToggle, ' Type into this session'),
      h('p', { class: 'hint' }, canWrite ? 'Off: you watch. On: what you type goes to the session, and the attach is audited.' : 'Read-only: your token lacks the terminal:write scope.')),
    status,
    screen);

  const term = new Terminal({ cols: info.cols || 80, rows: info.rows || 24, screenKeys: false, useStyle: false, cursorBlink: false });
  term.open(screen);
  // term.js takes the focus when it opens; a reader arrives at the page's top, not in the screen.
  term.blur?.();
  window.scrollTo(0, 0);
  let socket = null, closed = false, attachment = null, after = null, input = false, timer = null, attempt = 0;
  term.on('data', (data) => {
    if (input && socket?.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type: 'input', data }));
  });
  const connect = async () => {
    if (closed) return;
    const query = new URLSearchParams({ protocol: '1' });
    if (input) query.set('input', 'true');
    if (attachment && after !== null) {
      query.set('after', String(after));
      query.set('attachment', attachment);
    }
    status.textContent = 'Terminal: connecting';
    const ws = await openSocket(`/v1/terminal/sessions/${seg(id)}/attach?${query}`);
    socket = ws;
    ws.addEventListener('message', (message) => {
      let frame;
      try {
        frame = JSON.parse(message.data);
      } catch {
        return;
      }
      switch (frame.type) {
        case 'hello':
          attempt = 0;
          attachment = frame.attachment;
          status.textContent = `Terminal: ${frame.input ? 'attached, input on' : 'attached, read-only'}`;
          status.dataset.state = frame.input ? 'input' : 'read-only';
          break;
        case 'screen':
          after = frame.seq;
          if (frame.cols && frame.rows && (frame.cols !== term.cols || frame.rows !== term.rows)) term.resize(frame.cols, frame.rows);
          term.write(frame.data);
          screen.dataset.seq = String(frame.seq);
          break;
        case 'output':
          after = frame.seq;
          term.write(frame.data);
          screen.dataset.seq = String(frame.seq);
          break;
        case 'error':
        case 'end':
          status.textContent = `Terminal: ${frame.error?.code}: ${frame.error?.message}`;
          status.dataset.state = frame.type;
          if (frame.type === 'end' && !frame.error?.retryable) closed = frame.error?.code !== 'RateLimited';
          break;
      }
    });
    ws.addEventListener('close', (event) => {
      if (socket !== ws || closed) return;
      attempt += 1;
      status.textContent = `Terminal: disconnected (${event.code}); reconnecting`;
      timer = setTimeout(connect, Math.min(15_000, 500 * 2 ** attempt));
    });
  };
  inputToggle.addEventListener('change', () => {
    input = inputToggle.checked;
    attachment = null;
    after = null;
    const old = socket;
    socket = null;
    old?.close(1000, 'input changed');
    connect();
  });
  await connect();
  return () => {
    closed = true;
    clearTimeout(timer);
    socket?.close(1000, 'page left');
    term.destroy();
  };
}
