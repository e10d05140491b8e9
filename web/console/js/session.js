// The signed-in session: kept in this tab's sessionStorage (never localStorage, never a URL or a
// cookie), so it ends with the tab. A pasted access token has no refresh token and ends with its
// expiry; a device sign-in (enrolment code) gets a token pair whose refresh token rotates.

const KEY = 'swarmdeck.session';
// Tabs opened from this one start with a copy of its sessionStorage, and a refresh token is good
// for one use (a reused one revokes the sign-in). So tabs refresh one at a time (navigator.locks)
// and a tab that rotated a token answers the others' "rotated from X?" with the new pair.
const channel = 'BroadcastChannel' in self ? new BroadcastChannel('swarmdeck.session') : null;
const rotations = new Map(); // refresh token used → the session it became (this tab's, recent)
const listeners = new Set();

export class AuthError extends Error {}

/** A failure to refresh that may pass (network, 5xx, 429): the session is kept. */
export class RefreshUnavailable extends Error {}

function read() {
  try {
    return JSON.parse(sessionStorage.getItem(KEY) ?? 'null');
  } catch {
    return null;
  }
}

/** Who is signed in: pages start again only when this changes, not at every refresh. */
function identity(session) {
  return session ? `${session.kind}/${session.tenantId}/${session.deviceId}` : '';
}

function write(session) {
  const before = identity(read());
  if (session) sessionStorage.setItem(KEY, JSON.stringify(session));
  else sessionStorage.removeItem(KEY);
  if (identity(session) !== before) for (const listener of listeners) listener(session);
}

channel?.addEventListener('message', (event) => {
  const message = event.data;
  if (message?.type === 'ask') {
    // Follow the chain to the newest pair this tab made from that token.
    let next = rotations.get(message.refreshToken);
    while (next && rotations.has(next.refreshToken)) next = rotations.get(next.refreshToken);
    if (next) channel.postMessage({ type: 'rotated', from: message.refreshToken, session: next });
  } else if (message?.type === 'rotated') {
    const current = read();
    if (current?.refreshToken === message.from) write(message.session);
  }
});

/** The session, or null when signed out. */
export function current() {
  return read();
}

/** Calls `listener` when someone signs in or out (not when a token is refreshed). */
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
    lifetime: c.exp * 1000 - Date.now(),
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
    lifetime: pair.expiresIn * 1000,
    tenantId: pair.tenantId,
    deviceId: pair.deviceId,
    scopes: pair.scopes,
    kind: 'device',
  };
}

async function post(path, body) {
  let response;
  try {
    response = await fetch(path, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify(body),
      credentials: 'omit',
      cache: 'no-store',
      // A refresh holds every tab's lock: a stalled one must not hold it for long.
      signal: AbortSignal.timeout(15_000),
    });
  } catch (error) {
    throw new RefreshUnavailable(`The server cannot be reached: ${error.message}`);
  }
  const json = await response.json().catch(() => null);
  if (response.ok) return json;
  const message = json?.error?.message ?? `HTTP ${response.status}`;
  // Only an answer about the token itself ends the sign-in; the rest may pass.
  if (response.status === 400 || response.status === 401) throw new AuthError(message);
  throw new RefreshUnavailable(message);
}

/** Signs this browser in as a device with an enrolment code. */
export async function enrol(code, deviceName) {
  try {
    write(fromPair(await post('/v1/auth/device/register', { code: code.trim(), deviceName, platform: 'web' })));
  } catch (error) {
    throw new AuthError(error.message);
  }
}

// Sign-in through the organisation's OpenID Connect provider (control-api is the relying party,
// docs/control-api.md). This tab keeps a PKCE verifier of its own while the browser is at the
// provider; the one-time code that comes back is worth nothing without it.
const PROVIDER_KEY = 'swarmdeck.oidc';

function base64url(bytes) {
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** The provider people may sign in with ({issuer, name}), or null when there is none. */
export async function provider() {
  try {
    const response = await fetch('/v1/auth/oidc', { headers: { Accept: 'application/json' }, credentials: 'omit', cache: 'no-store' });
    return response.ok ? await response.json() : null;
  } catch {
    return null;
  }
}

/** Sends the browser to the provider; it comes back to /signin/oidc. */
export async function startProviderSignIn(deviceName) {
  if (!crypto.subtle) throw new AuthError('This page is not served over HTTPS (or from this machine), so the browser cannot make the sign-in\'s proof key.');
  const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
  const state = base64url(crypto.getRandomValues(new Uint8Array(16)));
  const challenge = base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
  let started;
  try {
    started = await post('/v1/auth/oidc/start', {
      returnUri: `${location.origin}/signin/oidc`,
      codeChallenge: challenge,
      state,
      deviceName,
      platform: 'web',
    });
  } catch (error) {
    throw new AuthError(error.message);
  }
  sessionStorage.setItem(PROVIDER_KEY, JSON.stringify({ verifier, state }));
  location.assign(started.authorizationUrl);
}

/** Finishes a provider sign-in with the address's `code` (or says why it did not work). */
export async function finishProviderSignIn(query) {
  const kept = JSON.parse(sessionStorage.getItem(PROVIDER_KEY) ?? 'null');
  sessionStorage.removeItem(PROVIDER_KEY);
  if (!kept || query.get('state') !== kept.state) throw new AuthError('This sign-in was not started in this tab: start it again.');
  const error = query.get('error');
  if (error === 'no_scopes') throw new AuthError('You signed in, but none of your groups gives you access to Swarmdeck: ask your admin.');
  if (error === 'access_denied') throw new AuthError('The sign-in was cancelled at the provider.');
  if (error) throw new AuthError(`The sign-in did not work: ${query.get('error_description') ?? error}`);
  try {
    write(fromPair(await post('/v1/auth/oidc/token', { code: query.get('code') ?? '', codeVerifier: kept.verifier })));
  } catch (error) {
    throw new AuthError(error.message);
  }
}

export function signOut() {
  write(null);
}

let refreshing = null;

/** A usable access token; a device's is refreshed first when a quarter of its life is left. */
export async function accessToken({ force = false } = {}) {
  const session = read();
  if (!session) throw new AuthError('Not signed in.');
  const margin = Math.min(60_000, (session.lifetime ?? 900_000) / 4);
  if (!force && session.expiresAt - Date.now() > margin) return session.accessToken;
  if (!session.refreshToken) {
    if (session.expiresAt > Date.now() && !force) return session.accessToken;
    write(null);
    throw new AuthError('The access token has expired: sign in again.');
  }
  refreshing ??= refresh(session.refreshToken).finally(() => (refreshing = null));
  return refreshing;
}

/** Asks the other tabs whether one of them rotated `refreshToken` already (answers within 300 ms). */
function askOtherTabs(refreshToken) {
  if (!channel) return Promise.resolve(null);
  return new Promise((resolve) => {
    const answer = (event) => {
      if (event.data?.type !== 'rotated' || event.data.from !== refreshToken) return;
      channel.removeEventListener('message', answer);
      resolve(event.data.session);
    };
    channel.addEventListener('message', answer);
    channel.postMessage({ type: 'ask', refreshToken });
    setTimeout(() => {
      channel.removeEventListener('message', answer);
      resolve(null);
    }, 300);
  });
}

async function refresh(refreshToken) {
  const run = async () => {
    // Inside the lock: another tab may have rotated this token while this one waited, and the
    // reader may have signed out meanwhile (then nothing is written back).
    const latest = read();
    if (!latest) throw new AuthError('Signed out.');
    if (latest.refreshToken !== refreshToken) return latest.accessToken;
    const stillOurs = () => read()?.refreshToken === refreshToken;
    // Stores a rotated pair, unless the reader signed out (or in again) meanwhile.
    const adopt = (session) => {
      if (!stillOurs()) throw new AuthError('Signed out.');
      write(session);
      return session.accessToken;
    };
    const rotated = await askOtherTabs(refreshToken);
    if (rotated) return adopt(rotated);
    try {
      const next = fromPair(await post('/v1/auth/token/refresh', { refreshToken }));
      rotations.set(refreshToken, next);
      if (rotations.size > 20) rotations.delete(rotations.keys().next().value);
      const token = adopt(next);
      channel?.postMessage({ type: 'rotated', from: refreshToken, session: next });
      return token;
    } catch (error) {
      if (error instanceof AuthError) {
        if (stillOurs()) write(null); // not a sign-in made since
        throw new AuthError(`Signed out: ${error.message}`);
      }
      throw error;
    }
  };
  return navigator.locks ? navigator.locks.request('swarmdeck.refresh', run) : run();
}
