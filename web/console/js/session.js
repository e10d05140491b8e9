// The signed-in session: kept in this tab's sessionStorage (never localStorage, never a URL or a
// cookie), so it ends with the tab. A pasted access token has no refresh token and ends with its
// expiry; a device sign-in (enrolment code) gets a token pair whose refresh rotates.

const KEY = 'swarmdeck.session';
// Tabs opened from this one start with a copy of its sessionStorage; a refresh token must be used
// once, so tabs tell each other about a rotation and take turns refreshing (navigator.locks).
const channel = 'BroadcastChannel' in self ? new BroadcastChannel('swarmdeck.session') : null;
const listeners = new Set();

export class AuthError extends Error {}

function read() {
  try {
    return JSON.parse(sessionStorage.getItem(KEY) ?? 'null');
  } catch {
    return null;
  }
}

function write(session) {
  if (session) sessionStorage.setItem(KEY, JSON.stringify(session));
  else sessionStorage.removeItem(KEY);
  for (const listener of listeners) listener(session);
}

channel?.addEventListener('message', (event) => {
  const current = read();
  const next = event.data;
  // Only a rotation of this tab's own sign-in (same device) replaces it.
  if (current && next?.deviceId && current.deviceId === next.deviceId && next.refreshedAt > (current.refreshedAt ?? 0)) write(next);
});

/** The session, or null when signed out. */
export function current() {
  return read();
}

export function onChange(listener) {
  listeners.add(listener);
}

/** The claims of a JWT (not verified: the services verify it; the console only reads them). */
export function claims(token) {
  const part = String(token).split('.')[1];
  if (!part) throw new AuthError('That is not an access token (a JWT has three parts).');
  try {
    const json = atob(part.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(part.length / 4) * 4, '='));
    return JSON.parse(json);
  } catch {
    throw new AuthError('That is not an access token (its claims do not decode).');
  }
}

/** Signs in with a pasted access token. */
export function useToken(token) {
  const trimmed = token.trim();
  const c = claims(trimmed);
  if (typeof c.exp !== 'number' || c.exp * 1000 <= Date.now()) throw new AuthError('That token has expired: mint or paste a fresh one.');
  write({
    accessToken: trimmed,
    expiresAt: c.exp * 1000,
    tenantId: c.tid ?? '',
    deviceId: c.sub ?? '',
    scopes: String(c.scope ?? '').split(' ').filter(Boolean),
    kind: 'token',
  });
}

function fromPair(pair) {
  return {
    accessToken: pair.accessToken,
    refreshToken: pair.refreshToken,
    expiresAt: Date.now() + pair.expiresIn * 1000,
    tenantId: pair.tenantId,
    deviceId: pair.deviceId,
    scopes: pair.scopes,
    kind: 'device',
    refreshedAt: Date.now(),
  };
}

async function post(path, body) {
  const response = await fetch(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    body: JSON.stringify(body),
    credentials: 'omit',
    cache: 'no-store',
  });
  const json = await response.json().catch(() => null);
  if (!response.ok) throw new AuthError(json?.error?.message ?? `HTTP ${response.status}`);
  return json;
}

/** Signs this browser in as a device with an enrolment code. */
export async function enrol(code, deviceName) {
  const pair = await post('/v1/auth/device/register', { code: code.trim(), deviceName, platform: 'web' });
  write(fromPair(pair));
}

export function signOut() {
  write(null);
}

let refreshing = null;

/** A usable access token: refreshed first when it expires within a minute (device sign-ins). */
export async function accessToken({ force = false } = {}) {
  const session = read();
  if (!session) throw new AuthError('Not signed in.');
  if (!force && session.expiresAt - Date.now() > 60_000) return session.accessToken;
  if (!session.refreshToken) {
    if (session.expiresAt > Date.now() && !force) return session.accessToken;
    write(null);
    throw new AuthError('The access token has expired: sign in again.');
  }
  refreshing ??= refresh(session.refreshToken).finally(() => (refreshing = null));
  return refreshing;
}

async function refresh(refreshToken) {
  const run = async () => {
    // Another tab may have rotated it while this one waited for the lock.
    const latest = read();
    if (latest?.refreshToken && latest.refreshToken !== refreshToken) return latest.accessToken;
    try {
      const next = fromPair(await post('/v1/auth/token/refresh', { refreshToken }));
      write(next);
      channel?.postMessage(next);
      return next.accessToken;
    } catch (error) {
      write(null);
      throw new AuthError(`Signed out: ${error.message}`);
    }
  };
  return navigator.locks ? navigator.locks.request('swarmdeck.refresh', run) : run();
}
