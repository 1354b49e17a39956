import { isIP } from 'node:net';

/**
 * The operator's lists of private endpoints (TAP_EGRESS_ALLOW, REST_SINK_ALLOW, …), parsed with the
 * configuration: plain data that the egress policy (`@tapyard/egress`) enforces.
 */

/**
 * The one environment whose work may use an allow-list entry (written `<environment>=<entry>`); absent,
 * every environment's may. On a multi-tenant platform an unscoped entry lets every tenant reach it.
 */
export interface Scope {
  environment?: string;
}

/** An endpoint the operator lets callers reach although it is on a private network. */
export interface Endpoint extends Scope {
  host: string;
  port: number;
}

/** A host allowed on any port. */
export interface AllowedHost extends Scope {
  host: string;
}

/** A CIDR range (`10.0.0.0/8`, `fd00::/8`) every address of which is allowed, on any port. */
export interface AllowedRange extends Scope {
  range: string;
}

/** An allow-list of private endpoints: exact `host:port`s, whole hosts (any port), and CIDR ranges. */
export interface AllowList {
  endpoints: Endpoint[];
  hosts: AllowedHost[];
  ranges: AllowedRange[];
}

/** What an environment name may be (TAPYARD_ENV's and a tenant's rule): never holds `=`, `:` or `,`. */
export const ENVIRONMENT_NAME = /^[a-z][a-z0-9_-]{0,39}$/;

/**
 * `acme=10.0.0.5:5432` → `{ environment: 'acme', entry: '10.0.0.5:5432' }` (no `=`: no scope), or the
 * problem, naming the entry. Hosts, ports and ranges never hold `=`, so the first one ends the name.
 */
function scoped(entry: string): { scope: Scope; entry: string } | string {
  const at = entry.indexOf('=');
  if (at < 0) return { scope: {}, entry };
  const environment = entry.slice(0, at).trim();
  if (!ENVIRONMENT_NAME.test(environment)) {
    return `'${entry.slice(0, 80)}' does not start with an environment name (a lowercase letter, then a-z, 0-9, _ or -, at most 40) before =`;
  }
  return { scope: { environment }, entry: entry.slice(at + 1).trim() };
}

/** `[::1]` → `::1`, `Example.COM.` → `example.com`: the form allow-list entries and checks compare. */
export function normalizeHost(host: string): string {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  return bare.toLowerCase().replace(/\.$/, '');
}

/**
 * Parses `host:port,host:port` (IPv6 hosts in brackets: `[fd00::5]:443`), each optionally scoped to an
 * environment (`acme=10.0.0.5:5432`); returns the entries or the first problem, naming the entry.
 */
export function parseEndpoints(text: string): Endpoint[] | string {
  const out: Endpoint[] = [];
  for (const raw of text.split(',')) {
    if (raw.trim() === '') continue;
    const found = scoped(raw.trim());
    if (typeof found === 'string') return found;
    const endpoint = parseEndpoint(found.entry);
    if (!endpoint) return `'${raw.trim().slice(0, 80)}' is not host:port`;
    out.push({ ...endpoint, ...found.scope });
  }
  return out;
}

function parseEndpoint(entry: string): Endpoint | null {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(entry);
  const port = m ? Number(m[2]) : 0;
  return m && port >= 1 && port <= 65535 ? { host: normalizeHost(m[1]), port } : null;
}

/**
 * Parses an allow-list of `host`, `host:port` and CIDR entries (`10.0.0.0/8`, `[fd00::]/8` or
 * `fd00::/8`), comma-separated, each optionally scoped to an environment (`acme=10.0.0.0/24`); returns
 * it or the first problem, naming the entry.
 */
export function parseAllowList(text: string): AllowList | string {
  const out: AllowList = { endpoints: [], hosts: [], ranges: [] };
  for (const raw of text.split(',')) {
    if (raw.trim() === '') continue;
    const found = scoped(raw.trim());
    if (typeof found === 'string') return found;
    const { entry, scope } = found;
    const named = raw.trim().slice(0, 80);
    const cidr = /^\[?([0-9A-Fa-f:.]+)\]?\/(\d{1,3})$/.exec(entry);
    if (cidr) {
      const family = isIP(cidr[1]);
      const bits = Number(cidr[2]);
      if (family === 0 || bits > (family === 6 ? 128 : 32)) return `'${named}' is not a CIDR range`;
      out.ranges.push({ range: `${cidr[1]}/${bits}`, ...scope });
      continue;
    }
    const endpoint = parseEndpoint(entry);
    if (endpoint) out.endpoints.push({ ...endpoint, ...scope });
    else if (/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)$/.test(entry))
      out.hosts.push({ host: normalizeHost(entry), ...scope });
    else return `'${named}' is not a host, host:port or CIDR range`;
  }
  return out;
}
