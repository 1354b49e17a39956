import { LookupAddress } from 'node:dns';
import { Agent, IncomingMessage, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { LookupFunction, isIP } from 'node:net';
import { normalizeHost } from '@tapyard/core';
import { EgressPolicy } from './egress-policy';

/** The answer was a redirect: it is not followed, wherever it points. */
export class RedirectRefused extends Error {
  constructor(
    readonly path: string,
    readonly status: number,
  ) {
    super(`${path} answered HTTP ${status} (a redirect, which is not followed)`);
    this.name = 'RedirectRefused';
  }
}

export interface EgressRequestInit {
  method?: string;
  headers?: Record<string, string>;
  /** Chunks are written in one go (corked) after a content-length of their sum, none copied. */
  body?: string | Buffer | readonly Uint8Array[];
  signal?: AbortSignal;
  /** Bytes of the answer read at most; the rest is dropped. */
  maxBytes?: number;
  /**
   * Keeps connections open between requests to the same URL (a sink's batches); each connection is
   * still made to an address the policy vetted. Default: a new connection per request.
   */
  agent?: Agent;
}

export interface EgressResponse {
  status: number;
  body: string;
  headers: Record<string, string>;
}

/**
 * An HTTP(S) request to a URL a caller chose (a vector store's address in a secret): http and https
 * only, the host checked by the egress policy, the connection made to the address the policy saw, and
 * redirects never followed (a redirect to a private address would otherwise get around the policy).
 */
export async function egressRequest(
  policy: EgressPolicy,
  url: string,
  init: EgressRequestInit = {},
): Promise<EgressResponse> {
  const res = await egressOpen(policy, url, init);
  const maxBytes = init.maxBytes ?? 64 * 1024;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (c: Buffer) => {
      if (size < maxBytes) chunks.push(c.subarray(0, maxBytes - size));
      size += c.length;
    });
    res.on('end', () => {
      // Node parses the header lines into an object only when asked: most callers read the status
      // and body alone (a sink's batch answered 2xx), so the object is made on first use.
      let headers: Record<string, string> | undefined;
      resolve({
        status: res.statusCode ?? 0,
        body: Buffer.concat(chunks).toString('utf8'),
        get headers() {
          headers ??= headersOf(res);
          return headers;
        },
      });
    });
    res.on('error', reject);
  });
}

/** The answer's head, its body still to be read: the connection rules of egressRequest. */
function egressOpen(policy: EgressPolicy, url: string, init: EgressRequestInit): Promise<IncomingMessage> {
  const target = parseTarget(url);
  const lookup: LookupFunction = (hostname, options, callback) => {
    policy.check(hostname, target.port).then(
      (permit) => {
        if (options.all)
          callback(null, [{ address: permit.address, family: permit.family }] as LookupAddress[]);
        else callback(null, permit.address, permit.family);
      },
      (err: Error) => callback(err as NodeJS.ErrnoException, ''),
    );
  };
  const send = target.url.protocol === 'https:' ? httpsRequest : httpRequest;
  // A literal address is never looked up, so it is checked here; names are checked in lookup().
  const checked = isIP(target.host) ? policy.check(target.host, target.port) : Promise.resolve();
  return checked.then(
    () =>
      new Promise((resolve, reject) => {
        const chunks = Array.isArray(init.body) ? (init.body as readonly Uint8Array[]) : null;
        const headers =
          chunks === null
            ? init.headers
            : { ...init.headers, 'content-length': String(chunks.reduce((n, c) => n + c.length, 0)) };
        const req = send(target.url, {
          method: init.method ?? 'GET',
          headers,
          signal: init.signal,
          lookup,
          agent: init.agent ?? false,
        });
        req.on('error', reject);
        req.on('response', (res) => {
          const status = res.statusCode ?? 0;
          if (status >= 300 && status < 400) {
            res.destroy();
            reject(new RedirectRefused(target.url.pathname, status));
            return;
          }
          resolve(res);
        });
        if (chunks === null) req.end(init.body as string | Buffer | undefined);
        else {
          req.cork();
          for (const c of chunks) req.write(c);
          req.end();
        }
      }),
  );
}

function headersOf(res: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers[k] = String(v);
  return headers;
}

/**
 * The body as a web stream that ends in an error past `maxBytes`; cancelling it (or aborting the
 * request) closes the connection, so a streaming model call stops when its reader goes away.
 */
function boundedBody(res: IncomingMessage, maxBytes: number): ReadableStream<Uint8Array> {
  let size = 0;
  let settled = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      res.on('data', (c: Buffer) => {
        if (settled) return;
        size += c.length;
        if (size > maxBytes) {
          settled = true;
          res.destroy();
          controller.error(new Error(`the answer is larger than ${maxBytes} bytes`));
          return;
        }
        controller.enqueue(new Uint8Array(c.buffer, c.byteOffset, c.length));
      });
      res.on('end', () => {
        if (settled) return;
        settled = true;
        controller.close();
      });
      const fail = (err: Error): void => {
        if (settled) return;
        settled = true;
        controller.error(err);
      };
      res.on('error', fail);
      res.on('aborted', () => fail(new Error('the connection closed before the answer ended')));
    },
    cancel() {
      settled = true;
      res.destroy();
    },
  });
}

function parseTarget(text: string): { url: URL; host: string; port: number } {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error('the URL is not valid');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`only http and https URLs are allowed (got ${url.protocol.replace(/:$/, '')})`);
  }
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  return { url, host: normalizeHost(url.hostname), port };
}

/**
 * A `fetch` for client libraries (e.g. the OpenAI client) whose requests go to caller-chosen URLs:
 * each request is an egressRequest, so it connects only where the policy allows and never follows a
 * redirect. Answers stream as they arrive (model completions over SSE), up to `maxBytes`.
 */
export function egressFetch(policy: EgressPolicy, maxBytes = 64 * 1024 * 1024): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const headers: Record<string, string> = {};
    new Headers(init?.headers).forEach((v, k) => (headers[k] = v));
    const body = init?.body;
    if (body !== undefined && body !== null && typeof body !== 'string') {
      throw new TypeError('egressFetch sends string bodies only');
    }
    const res = await egressOpen(policy, url, {
      method: init?.method ?? 'GET',
      headers,
      body: body ?? undefined,
      signal: init?.signal ?? undefined,
    });
    const status = res.statusCode ?? 0;
    const empty = status === 204 || status === 304 || (init?.method ?? 'GET').toUpperCase() === 'HEAD';
    if (empty) res.resume();
    return new Response(empty ? null : boundedBody(res, maxBytes), { status, headers: headersOf(res) });
  }) as typeof fetch;
}
