import { LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { AllowList, Endpoint, Scope, normalizeHost } from '@tapyard/core';
import { isPublicAddress } from './addresses';

export type Resolver = (host: string) => Promise<LookupAddress[]>;

/** Where a permitted connection goes: the vetted address, never a second lookup of the name. */
export interface Permit {
  address: string;
  family: 4 | 6;
  /** Why it was allowed although private: the operator's allow-list. */
  allowListed: boolean;
}

/** A refusal, with a sentence for the caller that names the host and says how an operator allows it. */
export class EgressRefused extends Error {
  constructor(
    readonly host: string,
    readonly port: number,
    reason: string,
  ) {
    super(`connection to ${host}:${port} refused by the egress policy: ${reason}`);
    this.name = 'EgressRefused';
  }
}

const LOOKUP_TIMEOUT_MS = 5000;

const systemResolver: Resolver = (host) => lookup(host, { all: true, verbatim: true });

/**
 * Decides where caller-controlled connections may go (tap scripts, vector-store probes): public
 * addresses only, judged after DNS resolution, so a name that resolves (or re-resolves: DNS rebinding)
 * to a private address is refused; the permit carries the address the check saw and the connection
 * must use it. Endpoints on the operator's allow-list (`host:port`, matched as written) may be private.
 *
 * An allow-list entry may be scoped to one environment (`acme=10.0.0.5:5432`): only the policy of that
 * environment's work, `policy.for('acme')`, honours it. A policy made with `new` honours unscoped
 * entries alone, so work that forgets its environment is refused a scoped endpoint, never let through.
 */
export class EgressPolicy {
  private readonly allowed: Set<string>;
  private readonly hosts: Set<string>;
  private readonly ranges: BlockList;
  private readonly entries: AllowList;
  /** The environment whose work this policy checks (null: entries of no environment only). */
  private readonly environment: string | null;
  private readonly views = new Map<string, EgressPolicy>();

  /**
   * `allowVar`: the setting an operator changes to allow an address, named in refusals. `environment`:
   * whose work the policy checks (prefer `for(environment)` on the platform's policy).
   */
  constructor(
    allow: readonly Endpoint[] | AllowList = [],
    private readonly resolve: Resolver = systemResolver,
    private readonly allowVar = 'TAP_EGRESS_ALLOW',
    environment?: string,
  ) {
    this.entries = Array.isArray(allow)
      ? { endpoints: [...allow], hosts: [], ranges: [] }
      : (allow as AllowList);
    this.environment = environment ?? null;
    const mine = ({ environment: scope }: Scope): boolean =>
      scope === undefined || scope === this.environment;
    this.allowed = new Set(this.entries.endpoints.filter(mine).map((e) => key(e.host, e.port)));
    this.hosts = new Set(this.entries.hosts.filter(mine).map((h) => normalizeHost(h.host)));
    this.ranges = new BlockList();
    for (const { range } of this.entries.ranges.filter(mine)) {
      const [net, bits] = range.split('/');
      this.ranges.addSubnet(net, Number(bits), isIP(net) === 6 ? 'ipv6' : 'ipv4');
    }
  }

  /**
   * The policy of one environment's work: the unscoped entries and those scoped to `environment`,
   * never another environment's (a tenant's private database stays the tenant's).
   */
  for(environment: string): EgressPolicy {
    let view = this.views.get(environment);
    if (!view) {
      view = new EgressPolicy(this.entries, this.resolve, this.allowVar, environment);
      this.views.set(environment, view);
    }
    return view;
  }

  isAllowListed(host: string, port: number): boolean {
    return this.allowed.has(key(host, port)) || this.hosts.has(normalizeHost(host));
  }

  private inRanges(addresses: LookupAddress[]): boolean {
    return addresses.every((a) => this.ranges.check(a.address, a.family === 6 ? 'ipv6' : 'ipv4'));
  }

  async check(rawHost: string, port: number): Promise<Permit> {
    const host = normalizeHost(rawHost);
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      throw new EgressRefused(host, port, 'the port is not valid');
    }
    const addresses = await this.lookup(host, port);
    const allowListed = this.isAllowListed(host, port) || this.inRanges(addresses);
    if (!allowListed) {
      const inner = addresses.find((a) => !isPublicAddress(a.address));
      if (inner) {
        const what = isIP(host) ? 'it is' : `it resolves to ${inner.address}, which is`;
        throw new EgressRefused(
          host,
          port,
          `${what} a loopback, private, link-local or reserved address (${this.howToAllow(host, port)})`,
        );
      }
    }
    const first = addresses[0];
    return { address: first.address, family: first.family === 6 ? 6 : 4, allowListed };
  }

  /** The entry that would allow the endpoint: scoped to this policy's environment when it has one. */
  private howToAllow(host: string, port: number): string {
    const scope = this.environment === null ? '' : `${this.environment}=`;
    const whose = this.environment === null ? '' : ` for environment '${this.environment}'`;
    return `an operator may allow it${whose} with ${this.allowVar}=${scope}${formatHost(host)}:${port}`;
  }

  private async lookup(host: string, port: number): Promise<LookupAddress[]> {
    const family = isIP(host);
    if (family !== 0) return [{ address: host, family }];
    if (host === '' || host.length > 253) throw new EgressRefused(host, port, 'the host name is not valid');
    let timer: NodeJS.Timeout | undefined;
    try {
      const found = await Promise.race([
        this.resolve(host),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('the lookup timed out')), LOOKUP_TIMEOUT_MS);
        }),
      ]);
      if (found.length === 0) throw new Error('no address');
      return found;
    } catch (err) {
      throw new EgressRefused(host, port, `the name does not resolve (${(err as Error).message})`);
    } finally {
      clearTimeout(timer);
    }
  }
}

function key(host: string, port: number): string {
  return `${normalizeHost(host)}|${port}`;
}

function formatHost(host: string): string {
  return isIP(host) === 6 ? `[${host}]` : host;
}
