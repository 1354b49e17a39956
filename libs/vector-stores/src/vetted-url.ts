import { EgressPolicy } from '@tapyard/egress';

/**
 * A store's base URL from a secret, checked by the egress policy before any client connects. Over
 * http the client is pointed at the very address the policy vetted (no second lookup, so DNS
 * rebinding cannot redirect it); over https the name is kept, since the certificate is checked
 * against it, and a rebinding would also need a valid certificate for that name at that address.
 */
export async function vettedUrl(policy: EgressPolicy, raw: string, store: string): Promise<URL> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`secret '${store}' has a url that is not valid`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`secret '${store}' has a url that is not http or https`);
  }
  const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  const permit = await policy.check(url.hostname, port);
  if (url.protocol === 'http:') url.hostname = permit.family === 6 ? `[${permit.address}]` : permit.address;
  return url;
}

/** True for a failure to reach a server at all (refused, reset, timed out, no route, DNS). */
export function isUnreachable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: string }).code;
    if (
      code &&
      /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|UND_ERR_CONNECT_TIMEOUT|UND_ERR_SOCKET)$/.test(
        code,
      )
    )
      return true;
    const name = (e as { name?: string }).name;
    if (name === 'AbortError' || name === 'TimeoutError' || /Timeout/.test(name ?? '')) return true;
    // fetch's own failure (undici), whichever realm made it: `instanceof` cannot be trusted here.
    if (name === 'TypeError' && /fetch failed/.test((e as Error).message)) return true;
  }
  return false;
}
