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
  return unreachableReason(err) !== undefined;
}

/**
 * Why a server could not be reached (`ECONNREFUSED`, `TimeoutError`, …), from the error or its causes;
 * undefined when the error is something else. Codes and names only: never a message that could echo
 * a request's headers.
 */
export function unreachableReason(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: string }).code;
    if (
      code &&
      /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|UND_ERR_CONNECT_TIMEOUT|UND_ERR_SOCKET)$/.test(
        code,
      )
    )
      return code;
    const name = (e as { name?: string }).name;
    if (name === 'AbortError' || name === 'TimeoutError' || /Timeout/.test(name ?? '')) return name;
    // fetch's own failure (undici), whichever realm made it: `instanceof` cannot be trusted here. Its
    // cause names the reason: a connection error's code, or undici's own words ("bad port": fetch
    // never connects to ports such as 9 or 25).
    if (name === 'TypeError' && /fetch failed/.test((e as Error).message)) {
      const cause = (e as { cause?: unknown }).cause;
      const said = (cause as { message?: unknown } | undefined)?.message;
      return (
        unreachableReason(cause) ?? (typeof said === 'string' && said ? said.slice(0, 100) : 'fetch failed')
      );
    }
  }
  return undefined;
}
