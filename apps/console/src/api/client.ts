import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { components, paths } from './schema';

/**
 * The typed client of the API, generated from the server's own OpenAPI document at build time
 * (scripts/build: apps/api/src/openapi.ts → openapi-typescript → schema.d.ts). Every call the console
 * makes goes through it, so a route or field the API changes breaks the console's build, not its users.
 */
export type Schemas = components['schemas'];
export type ApiClient = Client<paths>;

/**
 * The pasted key (USE_API_KEYS only): kept for this tab's life in sessionStorage, never in localStorage,
 * a cookie or a log, so closing the tab forgets it.
 */
const KEY_ITEM = 'tapyard.apiKey';
export const pastedKey = {
  get: (): string | null => sessionStorage.getItem(KEY_ITEM),
  set: (value: string): void => sessionStorage.setItem(KEY_ITEM, value),
  clear: (): void => sessionStorage.removeItem(KEY_ITEM),
};

/** The login's CSRF token (readable cookie `tapyard_csrf`): cookie-authenticated writes must send it back. */
function csrfToken(): string | null {
  const m = /(?:^|;\s*)tapyard_csrf=([^;]+)/.exec(document.cookie);
  return m ? decodeURIComponent(m[1]) : null;
}

let credentialsEnded: () => void = () => undefined;

/** Called when a request answers 401 although the console had signed in: the session or key ended. */
export function onCredentialsEnded(listener: () => void): void {
  credentialsEnded = listener;
}

const credentials: Middleware = {
  onRequest({ request }) {
    const key = pastedKey.get();
    if (key) request.headers.set('x-api-key', key);
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      const token = csrfToken();
      if (token) request.headers.set('x-csrf-token', token);
    }
    return request;
  },
  onResponse({ request, response }) {
    const path = new URL(request.url).pathname;
    if (response.status === 401 && !path.endsWith('/auth/login') && !path.endsWith('/auth/me'))
      credentialsEnded();
    return response;
  },
};

function client(fetchImpl?: (request: Request) => Promise<Response>): ApiClient {
  const c = createClient<paths>({
    baseUrl: window.location.origin,
    credentials: 'same-origin',
    ...(fetchImpl ? { fetch: fetchImpl } : {}),
  });
  c.use(credentials);
  return c;
}

export const api = client();

/**
 * A client whose requests report the bytes sent: fetch cannot tell upload progress, XMLHttpRequest can,
 * so the request openapi-fetch built (URL, headers, multipart body) is sent through one.
 */
export function clientWithUploadProgress(onProgress: (sent: number, total: number) => void): ApiClient {
  return client(async (request) => {
    const body = await request.blob();
    return new Promise<Response>((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open(request.method, request.url);
      request.headers.forEach((value, name) => xhr.setRequestHeader(name, value));
      xhr.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : body.size);
      xhr.onload = () => {
        const headers = new Headers();
        for (const line of xhr.getAllResponseHeaders().trim().split(/\r?\n/)) {
          const at = line.indexOf(':');
          if (at > 0) headers.append(line.slice(0, at).trim(), line.slice(at + 1).trim());
        }
        resolve(new Response(xhr.responseText, { status: xhr.status, headers }));
      };
      xhr.onerror = () => reject(new TypeError('the upload was cut off (network error)'));
      xhr.send(body);
    });
  });
}

/** The API's one error body (`{statusCode, error, code, message}`), or what a failed call amounts to. */
export function problemOf(error: unknown, response: Response): string {
  const body = (error ?? {}) as { message?: unknown; code?: unknown };
  const message = typeof body.message === 'string' ? body.message : typeof error === 'string' ? error : '';
  if (response.status === 403)
    return `Refused (403 Forbidden): ${message || 'the caller lacks the capability'}`;
  return `${response.status} ${response.statusText}${message ? `: ${message}` : ''}`;
}
