import { EgressPolicy, egressRequest } from '@tapyard/egress';

/**
 * GET/POST a readiness URL from a secret; any 2xx is up, anything else is down with the status named.
 * The URL is a caller's choice, so it goes through the egress policy (http/https, no private address
 * unless allow-listed, no redirects): a health check cannot be turned into a probe of the host's ports.
 */
export async function probeHttp(
  policy: EgressPolicy,
  url: string,
  signal: AbortSignal,
  init: { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string } = {},
): Promise<void> {
  const res = await egressRequest(policy, url, { ...init, signal, maxBytes: 4096 });
  if (res.status < 200 || res.status > 299) {
    throw new Error(`${new URL(url).pathname} answered HTTP ${res.status}`);
  }
}

export function joinUrl(base: string, path: string): string {
  return base.replace(/\/+$/, '') + path;
}
