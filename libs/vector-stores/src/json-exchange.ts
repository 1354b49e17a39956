import { EgressPolicy, egressRequest } from '@tapyard/egress';

/** One request of a vector store's HTTP API: JSON both ways. */
export interface JsonRequest {
  method: string;
  /** The store's own headers (its credentials); the JSON ones are added. */
  headers: Record<string, string>;
  body?: unknown;
  /** The caller's (a search's or a load's); the request's own timeout applies as well. */
  signal?: AbortSignal;
  timeoutMs: number;
  maxBytes: number;
}

/**
 * A request of a store's HTTP API (Qdrant, Weaviate, Chroma) through egressRequest, so it reaches the
 * address the policy checked and follows no redirect. The body is sent with its length (sent chunked,
 * a DELETE's body went unread by Weaviate). Answers its status, its text and its JSON (undefined when
 * it is not JSON): what each store makes of them is its own.
 */
export async function jsonExchange(
  policy: EgressPolicy,
  url: string,
  r: JsonRequest,
): Promise<{ status: number; text: string; data: unknown }> {
  const json = r.body === undefined ? undefined : Buffer.from(JSON.stringify(r.body));
  const headers: Record<string, string> = { accept: 'application/json', ...r.headers };
  if (json) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(json.length);
  }
  const timeout = AbortSignal.timeout(r.timeoutMs);
  const res = await egressRequest(policy, url, {
    method: r.method,
    headers,
    body: json,
    signal: r.signal ? AbortSignal.any([r.signal, timeout]) : timeout,
    maxBytes: r.maxBytes,
  });
  let data: unknown;
  try {
    data = JSON.parse(res.body);
  } catch {
    data = undefined;
  }
  return { status: res.status, text: res.body, data };
}
