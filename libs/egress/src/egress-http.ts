import { LookupAddress } from 'node:dns';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { LookupFunction, isIP } from 'node:net';
import { normalizeHost } from './addresses';
import { EgressPolicy } from './egress-policy';

export interface EgressRequestInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
  /** Bytes of the answer read at most; the rest is dropped. */
  maxBytes?: number;
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
  const target = parseTarget(url);
  // A literal address is never looked up, so it is checked here; names are checked in lookup().
  if (isIP(target.host)) await policy.check(target.host, target.port);
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
  const maxBytes = init.maxBytes ?? 64 * 1024;
  return new Promise((resolve, reject) => {
    const req = send(target.url, {
      method: init.method ?? 'GET',
      headers: init.headers,
      signal: init.signal,
      lookup,
      agent: false,
    });
    req.on('error', reject);
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400) {
        res.destroy();
        reject(
          new Error(`${target.url.pathname} answered HTTP ${status} (a redirect, which is not followed)`),
        );
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        if (size < maxBytes) chunks.push(c.subarray(0, maxBytes - size));
        size += c.length;
      });
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers[k] = String(v);
      res.on('end', () => resolve({ status, body: Buffer.concat(chunks).toString('utf8'), headers }));
      res.on('error', reject);
    });
    req.end(init.body);
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
 * redirect. Answers are read up to `maxBytes`.
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
    const res = await egressRequest(policy, url, {
      method: init?.method ?? 'GET',
      headers,
      body: body ?? undefined,
      signal: init?.signal ?? undefined,
      maxBytes,
    });
    return new Response(res.status === 204 ? null : res.body, { status: res.status, headers: res.headers });
  }) as typeof fetch;
}
