// One ACP thread, live: the conversation with its agent as its envelopes come (resumed from the
// last seq after a reconnect), a prompt to send, the turn to cancel, and the agent's permission
// requests to answer. Sending needs thread:write; an allow answer needs tool:run too
// (docs/stream-protocol.md, "Talking to the agent").
import { h, replace, facts, link } from '../dom.js';
import { current } from '../session.js';
import { ACPConnection } from '../acp.js';
import { announce } from '../app.js';

export async function render(main, [thread]) {
  const scopes = current().scopes;
  const canWrite = scopes.includes('thread:write');
  const canRun = scopes.includes('tool:run');
  const status = h('p', { class: 'stream-status', id: 'thread-status', role: 'status' }, 'connecting');
  const conversation = h('ol', { class: 'conversation', id: 'conversation', 'aria-label': 'Conversation' });
  const notice = h('div', { id: 'thread-notice', role: 'alert' });
  const prompt = h('textarea', { id: 'thread-prompt', rows: 3, disabled: !canWrite, maxlength: 20000 });
  const send = h('button', { type: 'submit', disabled: !canWrite }, 'Send');
  const cancel = h('button', { type: 'button', class: 'secondary', id: 'thread-cancel', disabled: !canWrite }, 'Cancel turn');
  let session = thread;
  let agentMessage = null;
  let nextID = 1;
  // The agent's permission requests by their seq in the thread (ids restart with each agent
  // process; an answer names the seq of the request it answers: answers_seq).
  const requests = new Map();
  const answered = new Set();

  const add = (cls, ...children) => {
    const item = h('li', { class: cls }, ...children);
    conversation.append(item);
    return item;
  };
  const settle = (seq, text) => {
    answered.add(seq);
    const item = requests.get(seq);
    if (!item) return;
    for (const button of item.querySelectorAll('button')) button.disabled = true;
    item.append(h('p', { class: 'answer' }, text));
  };

  const show = (envelope) => {
    const body = envelope.body ?? {};
    session = envelope.session_id ?? session;
    const fromAgent = envelope.direction === 'agent_to_client';
    const params = body.params ?? {};
    if (!fromAgent) {
      agentMessage = null;
      if (body.method === 'session/prompt') {
        const text = (params.prompt ?? []).filter((b) => b.type === 'text').map((b) => b.text).join('\n');
        add('you', h('span', { class: 'who' }, envelope.device ?? 'client'), ' ', text);
      } else if (body.method === 'session/cancel') {
        add('note', `Cancel sent${envelope.device ? ` by ${envelope.device}` : ''}`);
      } else if (body.result !== undefined || body.error !== undefined) {
        const outcome = body.result?.outcome;
        const text = outcome?.outcome === 'selected' ? `Answered: ${outcome.optionId}` : 'Answered: cancelled';
        const seq = envelope.answers_seq;
        if (seq !== undefined && !answered.has(seq)) settle(seq, `${text}${envelope.device ? ` (${envelope.device})` : envelope.origin === 'service' ? ' (approval gate)' : ''}`);
      }
      return;
    }
    if (body.method === 'session/update') {
      const update = params.update ?? {};
      if (update.sessionUpdate === 'agent_message_chunk' || update.sessionUpdate === 'agent_thought_chunk') {
        const text = update.content?.type === 'text' ? update.content.text : '';
        const cls = update.sessionUpdate === 'agent_message_chunk' ? 'agent' : 'agent thought';
        if (!agentMessage || agentMessage.className !== cls) agentMessage = add(cls, h('span', { class: 'who' }, 'agent'), ' ');
        agentMessage.append(text);
      } else if (update.sessionUpdate === 'tool_call' || update.sessionUpdate === 'tool_call_update') {
        agentMessage = null;
        add('tool', `Tool: ${update.title ?? update.toolCallId ?? ''}${update.status ? ` (${update.status})` : ''}`);
      }
      return;
    }
    agentMessage = null;
    if (body.method === 'session/request_permission') {
      const item = add('permission', h('p', {}, `Permission: ${params.toolCall?.title ?? 'a tool call'}`));
      requests.set(envelope.seq, item);
      const options = h('div', { class: 'actions' });
      for (const option of params.options ?? []) {
        // Anything but a reject option can let the tool run: it needs tool:run.
        const allows = !String(option.kind).startsWith('reject');
        options.append(h('button', {
          type: 'button',
          class: allows ? '' : 'secondary',
          disabled: !canWrite || (allows && !canRun),
          title: allows && !canRun ? 'Allowing needs the tool:run scope' : undefined,
          onclick: () => connection.send({ id: body.id, result: { outcome: { outcome: 'selected', optionId: option.optionId } } }),
        }, option.name ?? option.optionId));
      }
      item.append(options);
      if (answered.has(envelope.seq)) settle(envelope.seq, 'Answered');
    } else if (body.result?.stopReason) {
      add('note', `Turn ended: ${body.result.stopReason}`);
    } else if (body.error) {
      add('error', `Error: ${body.error.message ?? ''}`);
    }
  };

  let ackTimer = null;
  const connection = new ACPConnection({
    thread,
    onEnvelope: (envelope) => {
      show(envelope);
      clearTimeout(ackTimer);
      ackTimer = setTimeout(() => connection.request('acp.cache.ack', { thread_id: thread, seq: connection.lastSeq }).catch(() => {}), 1000);
    },
    onNotice: (message) => {
      if (message.method === 'acp.cache.expired') {
        add('note', `Messages ${message.params.from_seq}–${message.params.to_seq} passed retention.`);
      } else if (message.error) {
        replace(notice, h('div', { class: 'error-box' }, message.error.message));
      } else if (message.method === 'acp.cache.sent') {
        replace(notice);
      }
    },
    onStatus: (text) => (status.textContent = text),
  });

  const form = h('form', {
    class: 'composer',
    onsubmit: (event) => {
      event.preventDefault();
      const text = prompt.value.trim();
      if (!text) return;
      connection.send({ id: `console-${Date.now()}-${nextID++}`, method: 'session/prompt', params: { sessionId: session, prompt: [{ type: 'text', text }] } });
      prompt.value = '';
      announce('Prompt sent');
    },
  },
  h('label', { for: 'thread-prompt' }, 'Prompt'), prompt,
  h('p', { class: 'hint' }, canWrite ? 'Sent to the agent in this thread.' : 'Read-only: your token lacks the thread:write scope.'),
  h('div', { class: 'actions' }, send, cancel));
  cancel.addEventListener('click', () => connection.send({ method: 'session/cancel', params: { sessionId: session } }));

  const info = await connection.request('acp.cache.threads', { limit: 1000 }).catch(() => ({ threads: [] }));
  const summary = info.threads.find((t) => t.thread_id === thread) ?? {};
  replace(main,
    h('h1', {}, `Thread: ${summary.title ?? thread}`),
    facts([
      ['Thread', thread],
      ['Agent', summary.agent_id ? link(`/agents/${encodeURIComponent(summary.agent_id)}`, summary.agent_id) : undefined],
      ['Swarm', summary.swarm_id],
    ]),
    status,
    conversation,
    notice,
    form);
  return () => {
    clearTimeout(ackTimer);
    connection.close();
  };
}
