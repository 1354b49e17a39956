/** GET/POST a readiness URL; any 2xx is up, anything else is down with the status named. */
export async function probeHttp(
  url: string,
  signal: AbortSignal,
  init: { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string } = {},
): Promise<void> {
  const res = await fetch(url, {
    method: init.method ?? 'GET',
    headers: init.headers,
    body: init.body,
    signal,
  });
  await res.arrayBuffer().catch(() => undefined);
  if (!res.ok) throw new Error(`${new URL(url).pathname} answered HTTP ${res.status}`);
}

export function joinUrl(base: string, path: string): string {
  return base.replace(/\/+$/, '') + path;
}
