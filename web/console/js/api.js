// The REST client: every call carries the session's bearer token in a header; an expired token is
// refreshed once and the call retried. Errors arrive as the services' envelope (docs/errors.md).
import { accessToken, AuthError } from './session.js';

/** An error answer, with the envelope's code, message and request id. */
export class APIError extends Error {
  constructor(status, envelope, requestId) {
    super(envelope?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = envelope?.code ?? 'ServerError';
    this.details = envelope?.details;
    this.requestId = envelope?.requestId ?? requestId;
    this.retryable = envelope?.retryable ?? false;
  }

  /** The message a person reads, with the request id to quote. */
  describe() {
    return `${this.code}: ${this.message}${this.requestId ? ` (request ${this.requestId})` : ''}`;
  }
}

async function send(path, { method = 'GET', body, accept = 'application/json' } = {}, force = false) {
  const token = await accessToken({ force });
  const headers = { Authorization: `Bearer ${token}`, Accept: accept };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  return fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'omit',
    cache: 'no-store',
    redirect: 'error',
  });
}

async function call(path, options) {
  let response = await send(path, options);
  if (response.status === 401) {
    const envelope = await response.clone().json().catch(() => null);
    if (envelope?.error?.code === 'AuthExpired') response = await send(path, options, true);
  }
  return response;
}

async function failure(response) {
  const json = await response.json().catch(() => null);
  const error = new APIError(response.status, json?.error, response.headers.get('x-request-id'));
  error.body = json;
  if (response.status === 401) return new AuthError(error.describe());
  return error;
}

/** GET or POST `path` and decode its JSON answer. */
export async function api(path, options = {}) {
  const response = await call(path, options);
  if (!response.ok) throw await failure(response);
  return response.status === 204 ? null : response.json();
}

/** GET `path` as text (artifacts). */
export async function apiText(path, accept = 'text/markdown') {
  const response = await call(path, { accept });
  if (!response.ok) throw await failure(response);
  return response.text();
}

/** The message a person reads for any error (an API error names its code and request id). */
export function errorText(error) {
  return error.describe?.() ?? error.message;
}

/** One idempotency key for a form, kept across retries while the first answer may have been
 * lost (network, 5xx: a retry then gets the first outcome), renewed after a refusal (4xx:
 * nothing was stored). */
export class RetryKey {
  constructor() {
    this.value = crypto.randomUUID();
  }

  /** After a failed send: true when the key is kept, so the form's fields must not change. */
  keptAfter(error) {
    if (error.status >= 400 && error.status < 500) {
      this.value = crypto.randomUUID();
      return false;
    }
    return true;
  }
}

/** `path` with `params` (undefined and empty values left out), each encoded. */
export function withQuery(path, params) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') query.set(name, value);
  }
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}

/** An id as one path segment. */
export const seg = (id) => encodeURIComponent(id);
