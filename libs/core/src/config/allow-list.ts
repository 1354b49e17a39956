import { isIP } from 'node:net';

/**
 * The operator's lists of private endpoints (TAP_EGRESS_ALLOW, REST_SINK_ALLOW, …), parsed with the
 * configuration: plain data that the egress policy (`@tapyard/egress`) enforces.
 */

/** An endpoint the operator lets callers reach although it is on a private network. */
export interface Endpoint {
  host: string;
  port: number;
}

/** An allow-list of private endpoints: exact `host:port`s, whole hosts (any port), and CIDR ranges. */
export interface AllowList {
  endpoints: Endpoint[];
  hosts: string[];
  ranges: string[];
}

/** `[::1]` → `::1`, `Example.COM.` → `example.com`: the form allow-list entries and checks compare. */
export function normalizeHost(host: string): string {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  return bare.toLowerCase().replace(/\.$/, '');
}

/**
 * Parses `host:port,host:port` (IPv6 hosts in brackets: `[fd00::5]:443`); returns the entries or the
 * first problem, naming the entry.
 */
export function parseEndpoints(text: string): Endpoint[] | string {
  const out: Endpoint[] = [];
  for (const raw of text.split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const m = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(entry);
    const port = m ? Number(m[2]) : 0;
    if (!m || port < 1 || port > 65535) return `'${entry.slice(0, 80)}' is not host:port`;
    out.push({ host: normalizeHost(m[1]), port });
  }
  return out;
}

/**
 * Parses an allow-list of `host`, `host:port` and CIDR entries (`10.0.0.0/8`, `[fd00::]/8` or
 * `fd00::/8`), comma-separated; returns it or the first problem, naming the entry.
 */
export function parseAllowList(text: string): AllowList | string {
  const out: AllowList = { endpoints: [], hosts: [], ranges: [] };
  for (const raw of text.split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const cidr = /^\[?([0-9A-Fa-f:.]+)\]?\/(\d{1,3})$/.exec(entry);
    if (cidr) {
      const family = isIP(cidr[1]);
      const bits = Number(cidr[2]);
      if (family === 0 || bits > (family === 6 ? 128 : 32))
        return `'${entry.slice(0, 80)}' is not a CIDR range`;
      out.ranges.push(`${cidr[1]}/${bits}`);
      continue;
    }
    const endpoint = parseEndpoints(entry);
    if (typeof endpoint !== 'string') {
      out.endpoints.push(...endpoint);
      continue;
    }
    if (/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)$/.test(entry)) out.hosts.push(normalizeHost(entry));
    else return `'${entry.slice(0, 80)}' is not a host, host:port or CIDR range`;
  }
  return out;
}
