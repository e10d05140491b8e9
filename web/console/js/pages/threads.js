// The tenant's ACP threads (acp.cache.threads on /v1/acp): title, agent, unread, each opening
// its conversation.
import { h, replace, link, table } from '../dom.js';
import { ACPConnection } from '../acp.js';

export async function render(main) {
  const connection = new ACPConnection();
  try {
    const { threads } = await connection.request('acp.cache.threads', { limit: 200 });
    replace(main,
      h('h1', {}, 'Threads'),
      h('p', { class: 'hint' }, 'Conversations with ACP agents (swarmdeck agent run --acp).'),
      table('ACP threads', [
        ['Thread', (t) => link(`/threads/${encodeURIComponent(t.thread_id)}`, t.title || t.thread_id)],
        ['Agent', (t) => (t.agent_id ? link(`/agents/${encodeURIComponent(t.agent_id)}`, t.agent_id) : '')],
        ['Swarm', (t) => (t.swarm_id ? link(`/swarms/${encodeURIComponent(t.swarm_id)}`, t.swarm_id) : '')],
        ['Messages', (t) => String(t.head_seq)],
        ['Unread', (t) => String(t.unread)],
      ], threads, 'No ACP thread yet.'));
  } finally {
    connection.close();
  }
}
