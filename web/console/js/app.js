// The console's shell: a router over the paths the services' webUrl links use, the session in
// the header, and the sign-in page when there is no session. Pages are modules in ./pages that
// export render(main, params, query) and may return a function that stops their live parts.
import { h, replace } from './dom.js';
import * as session from './session.js';
import { signIn } from './pages/signin.js';
import { errorText } from './api.js';

const routes = [
  [/^\/$/, () => import('./pages/overview.js'), 'Overview'],
  [/^\/swarms\/([^/]+)$/, () => import('./pages/swarm.js'), 'Swarm'],
  [/^\/agents\/([^/]+)$/, () => import('./pages/agent.js'), 'Agent'],
  [/^\/workers\/([^/]+)$/, () => import('./pages/agent.js'), 'Worker'],
  [/^\/sessions\/([^/]+)$/, () => import('./pages/session.js'), 'Session'],
  [/^\/traces\/([^/]+)$/, () => import('./pages/trace.js'), 'Trace'],
  [/^\/timeline$/, () => import('./pages/timeline.js'), 'Timeline'],
  [/^\/incidents$/, () => import('./pages/incidents.js'), 'Incidents'],
  [/^\/incidents\/([^/]+)$/, () => import('./pages/incident.js'), 'Incident'],
  [/^\/gates$/, () => import('./pages/gates.js'), 'Approvals'],
  [/^\/gates\/([^/]+)$/, () => import('./pages/gate.js'), 'Approval gate'],
  [/^\/pipelines$/, () => import('./pages/pipelines.js'), 'Pipelines'],
  [/^\/pipelines\/([^/]+)$/, () => import('./pages/pipeline.js'), 'Pipeline'],
  [/^\/threads$/, () => import('./pages/threads.js'), 'Threads'],
  [/^\/threads\/([^/]+)$/, () => import('./pages/thread.js'), 'Thread'],
  [/^\/terminal$/, () => import('./pages/terminals.js'), 'Terminals'],
  [/^\/terminal\/([^/]+)$/, () => import('./pages/terminal.js'), 'Terminal'],
];

const main = document.getElementById('main');
let stop = null;
let generation = 0;

function decode(segment) {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

async function render() {
  const run = ++generation;
  stop?.();
  stop = null;
  renderSession();
  const path = location.pathname;
  shownPath = path + location.search;
  const route = routes.find(([pattern]) => pattern.test(path));
  for (const a of document.querySelectorAll('.site-header nav a')) {
    const here = a.getAttribute('href') === '/' ? path === '/' : path.startsWith(a.getAttribute('href'));
    if (here) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  if (path === '/signin/oidc') {
    // Back from the provider: trade the one-time code, then leave its address (and the code) behind.
    let problem = null;
    try {
      await session.finishProviderSignIn(new URLSearchParams(location.search));
    } catch (error) {
      problem = error;
    }
    history.replaceState(null, '', '/');
    if (problem) {
      document.title = 'Sign in · Swarmdeck';
      signIn(main, () => render(), problem);
      return;
    }
    return render();
  }
  if (!session.current()) {
    document.title = 'Sign in · Swarmdeck';
    signIn(main, () => render());
    return;
  }
  if (!route) {
    document.title = 'Not found · Swarmdeck';
    replace(main, h('h1', {}, 'Not found'), h('p', {}, 'The console has no page at ', h('code', {}, path), '.'));
    return;
  }
  const [pattern, load, title] = route;
  const params = pattern.exec(path).slice(1).map(decode);
  document.title = `${title}${params[0] ? ` ${params[0]}` : ''} · Swarmdeck`;
  replace(main, h('p', { class: 'empty' }, 'Loading…'));
  // The page renders into a view of its own, shown only if the reader is still on it when it is
  // ready: a slow page never paints over the one that followed it.
  const view = h('div', { class: 'view' });
  try {
    const page = await load();
    if (run !== generation) return;
    const cleanup = await page.render(view, params, new URLSearchParams(location.search), { title });
    if (run !== generation) {
      cleanup?.();
      return;
    }
    replace(main, view);
    stop = cleanup ?? null;
  } catch (error) {
    if (run !== generation) return;
    if (error instanceof session.AuthError) {
      session.signOut();
      return;
    }
    replace(main, h('h1', {}, title), h('div', { class: 'error-box', role: 'alert' }, errorText(error)));
  }
  main.dataset.ready = String(run);
}

function renderSession() {
  const box = document.getElementById('session');
  const current = session.current();
  if (!current) {
    replace(box);
    return;
  }
  replace(box,
    h('span', {}, `Tenant ${current.tenantId}`),
    h('button', { type: 'button', class: 'secondary', onclick: () => session.signOut() }, 'Sign out'));
}

/** Goes to `path` inside the console (no reload). */
export function navigate(path) {
  history.pushState(null, '', path);
  render().then(() => main.focus());
}

/** Shows the current page again (after a change it made, e.g. an acknowledgement). */
export function refresh() {
  return render();
}

/** Replaces the address's query (a page's filters) without showing the page again. */
export function replaceQuery(query) {
  history.replaceState(null, '', `${location.pathname}${query ? `?${query}` : ''}`);
  shownPath = location.pathname + location.search;
}

/** Tells screen readers something happened (a live region). */
export function announce(text) {
  const region = document.getElementById('announce');
  region.textContent = '';
  setTimeout(() => (region.textContent = text), 50);
}

document.addEventListener('click', (event) => {
  const a = event.target.closest?.('a[data-route]');
  if (!a || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin) return;
  // Leaving the terminal view is a page load: its relaxed style policy stays with it.
  if (location.pathname.startsWith('/terminal/')) return;
  event.preventDefault();
  navigate(url.pathname + url.search);
});
// A fragment (the skip link's #main) changes no page.
let shownPath = location.pathname + location.search;
addEventListener('popstate', () => {
  if (location.pathname + location.search === shownPath) return;
  render();
});
session.onChange(() => render());
render();
