import { EgressPolicy } from '@tapyard/egress';

/**
 * A store's base URL from a secret, checked by the egress policy before any client connects. Over
 * http the client is pointed at the very address the policy vetted (no second lookup, so DNS
 * rebinding cannot redirect it); over https the name is kept, since the certificate is checked
 * against it: a client given this URL must connect to the vetted address itself (egressRequest;
 * Milvus's gRPC channel with vettedEndpoint), or a rebinding name moves its connection.
 */
export async function vettedUrl(policy: EgressPolicy, raw: string, store: string): Promise<URL> {
  return (await vettedEndpoint(policy, raw, store)).url;
}

/**
 * The same check, with the port checked and the address the policy vetted (`[…]` for IPv6) beside the URL (whose host is
 * that address over http, the name over https), for a client that is told where to connect and
 * which name to verify the certificate against.
 */
export async function vettedEndpoint(
  policy: EgressPolicy,
  raw: string,
  store: string,
  /** The client's port for a URL that names none, over http (https: 443); else 80. */
  httpPort = 80,
): Promise<{ url: URL; address: string; port: number }> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`secret '${store}' has a url that is not valid`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`secret '${store}' has a url that is not http or https`);
  }
  const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : httpPort;
  const permit = await policy.check(url.hostname, port);
  const address = permit.family === 6 ? `[${permit.address}]` : permit.address;
  if (url.protocol === 'http:') url.hostname = address;
  return { url, address, port };
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
