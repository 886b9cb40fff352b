// The console's only way to the gateway: its public APIs, with the signed-in key.
// URLs are relative to the page (…/console/ → …/), so a path-prefixed Ingress works.

const KEY_NAME = 'aigateway.console.key';
const API_BASE = new URL('../', window.location.href);

export class ApiError extends Error {
  constructor(status, message, code) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** The key lives in sessionStorage only: gone when the tab closes. */
export const session = {
  key: () => window.sessionStorage.getItem(KEY_NAME),
  signIn: (key) => window.sessionStorage.setItem(KEY_NAME, key),
  signOut: () => window.sessionStorage.removeItem(KEY_NAME),
};

/** An absolute URL for a gateway path like `v1/logs`. */
export function apiUrl(path, query) {
  const url = new URL(path, API_BASE);
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value !== undefined && value !== null && value !== '') url.searchParams.set(name, String(value));
  }
  return url;
}

export function apiHeaders(extra = {}, key = session.key()) {
  return { 'x-gateway-api-key': key ?? '', ...extra };
}

/** GET or POST JSON; an error answer becomes an ApiError with the gateway's message. */
export async function api(path, { query, body, headers, signal, key } = {}) {
  const response = await fetch(apiUrl(path, query), {
    method: body === undefined ? 'GET' : 'POST',
    headers: apiHeaders(body === undefined ? headers : { 'content-type': 'application/json', ...headers }, key),
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
    cache: 'no-store',
    credentials: 'omit',
  });
  const json = await response.json().catch(() => null);
  if (!response.ok) throw new ApiError(response.status, json?.error?.message ?? `HTTP ${response.status}`, json?.error?.code);
  return json;
}
