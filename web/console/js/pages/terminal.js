// The terminal view: a tmux session through terminal-broker's WebSocket
// (docs/terminal-protocol.md), drawn by term.js (Debian's libjs-term.js, which the stack's
// install step puts on the edge). Read-only unless the reader turns input on, which needs the
// terminal:write scope; every attach with input is audited by the broker.
import { api, seg } from '../api.js';
import { h, replace, facts, badge } from '../dom.js';
import { current, AuthError } from '../session.js';
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
  const screen = h('div', { class: 'terminal-host', id: 'terminal-screen', role: 'region', tabindex: '0', 'aria-label': `Terminal ${info.displayName}` });
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
      h('p', { class: 'hint' }, canWrite ? 'Off: you watch. On: what you type goes to the session (Shift+Escape leaves the screen), and the attach is audited.' : 'Read-only: your token lacks the terminal:write scope.')),
    status,
    screen);

  // Read-only: term.js gets neither the focus nor the document's keys (nothing is trapped; the
  // screen is a scrollable region). With input on, it takes every key, Tab included, until
  // Shift+Escape gives the focus back to the page.
  let term = null;
  const draw = (input) => {
    if (term) {
      term.blur();
      term.destroy();
      screen.replaceChildren();
    }
    term = new Terminal({
      cols: info.cols || 80, rows: info.rows || 24, screenKeys: false, useStyle: false, cursorBlink: false,
      // Watching: no focus, no document-wide keys, no mouse reporting (whose click takes focus).
      useFocus: input, useEvents: input, useMouse: input,
    });
    term.open(screen);
    term.on('data', (data) => {
      if (input && socket?.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type: 'input', data }));
    });
    // One tab stop: the region when watching (to scroll it), term.js's element when typing.
    screen.tabIndex = input ? -1 : 0;
    if (!input) term.element.removeAttribute('tabindex');
  };
  const release = (event) => {
    if (event.key !== 'Escape' || !event.shiftKey || !input) return;
    event.preventDefault();
    event.stopPropagation();
    term.blur();
    inputToggle.focus();
  };
  window.addEventListener('keydown', release, true);
  // closed: the page was left; ended: the broker ended the attach for good (switching input
  // tries again).
  let socket = null, closed = false, ended = false, attachment = null, after = null, input = false, timer = null, attempt = 0;
  draw(false);
  let generation = 0; // the latest connect() wins; an older one still fetching a token gives up
  // Connects again after a back-off: 1 s doubling to 15 s.
  const retryLater = () => {
    attempt += 1;
    timer = setTimeout(connect, Math.min(15_000, 500 * 2 ** attempt));
  };
  const connect = async () => {
    if (closed || ended) return;
    const mine = ++generation;
    const query = new URLSearchParams({ protocol: '1' });
    if (input) query.set('input', 'true');
    if (attachment && after !== null) {
      query.set('after', String(after));
      query.set('attachment', attachment);
    }
    status.textContent = 'Terminal: connecting';
    let ws;
    try {
      ws = await openSocket(`/v1/terminal/sessions/${seg(id)}/attach?${query}`);
    } catch (error) {
      status.textContent = `Terminal: not connected: ${error.message}`;
      // Signed out: the router shows the sign-in. Otherwise (offline, the server busy) retry.
      if (!(error instanceof AuthError) && mine === generation) retryLater();
      return;
    }
    if (closed || mine !== generation) {
      // The page was left, or input was switched, while the token was fetched.
      ws.close(1000, 'superseded');
      return;
    }
    socket = ws;
    ws.addEventListener('message', (message) => {
      if (socket !== ws) return;
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
          status.textContent = `Terminal: ${frame.input ? 'attached, input on (Shift+Escape leaves the screen)' : 'attached, read-only'}`;
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
          // An end that will not pass by itself (not found, permission) stops the reconnects.
          if (frame.type === 'end' && !frame.error?.retryable && frame.error?.code !== 'RateLimited') ended = true;
          break;
      }
    });
    ws.addEventListener('close', (event) => {
      if (socket !== ws) return;
      socket = null;
      if (closed || ended) return;
      status.textContent = `Terminal: disconnected (${event.code}); reconnecting`;
      retryLater();
    });
  };
  inputToggle.addEventListener('change', () => {
    input = inputToggle.checked;
    ended = false;
    attachment = null;
    after = null;
    clearTimeout(timer);
    const old = socket;
    socket = null;
    old?.close(1000, 'input changed');
    draw(input);
    connect();
  });
  await connect();
  return () => {
    closed = true;
    clearTimeout(timer);
    window.removeEventListener('keydown', release, true);
    socket?.close(1000, 'page left');
    term.blur();
    term.destroy();
  };
}
