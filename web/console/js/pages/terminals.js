// Terminal sessions on the registered hosts (GET /v1/terminal/sessions and /v1/terminal/hosts), each opening the
// terminal view. Links load the view as a page of its own: it carries its own
// Content-Security-Policy (the terminal's colours are inline styles).
import { api } from '../api.js';
import { h, replace, link, badge, table, when } from '../dom.js';
import { current } from '../session.js';

export async function render(main) {
  if (!current().scopes.includes('terminal:attach')) {
    replace(main, h('h1', {}, 'Terminals'), h('p', {}, 'Your token lacks the terminal:attach scope.'));
    return;
  }
  // Seed 002's list, and each host with how asking it went (why its sessions may be missing).
  const [sessions, { hosts }] = await Promise.all([api('/v1/terminal/sessions'), api('/v1/terminal/hosts?listing=true')]);
  replace(main,
    h('h1', {}, 'Terminals'),
    table('Terminal sessions', [
      ['Session', (s) => h('a', { href: `/terminal/${encodeURIComponent(s.sessionId)}` }, s.displayName)],
      ['Agent', (s) => (s.agentId ? link(`/agents/${encodeURIComponent(s.agentId)}`, s.agentId) : '')],
      ['Status', (s) => badge(s.status)],
      ['Size', (s) => `${s.cols}×${s.rows}`],
      ['Last activity', (s) => when(s.lastActivity)],
    ], sessions, 'No tmux session on the registered hosts.'),
    h('h2', {}, 'Hosts'),
    table('Hosts', [
      ['Host', (x) => x.name],
      ['Status', (x) => badge(x.listing.status)],
      ['Error', (x) => (x.listing.error ? `${x.listing.error.code}: ${x.listing.error.message}` : '')],
    ], hosts, 'No host registered (an admin adds them: POST /v1/terminal/hosts).'));
}
