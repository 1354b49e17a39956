import { AllowList, Endpoint, parseAllowList, parseEndpoints } from './allow-list';

export type Env = Record<string, string | undefined>;

const SIZE_UNITS: Record<string, number> = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 };

/** Collects every problem so one boot attempt reports all bad variables at once. */
export class EnvReader {
  readonly problems: string[] = [];
  constructor(private readonly env: Env) {}

  raw(name: string): string | undefined {
    const v = this.env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  }

  string(name: string, fallback: string): string {
    return this.raw(name) ?? fallback;
  }

  optional(name: string): string | null {
    return this.raw(name) ?? null;
  }

  int(name: string, fallback: number, min: number, max: number): number {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    if (!/^-?\d+$/.test(v) || Number(v) < min || Number(v) > max) {
      this.problems.push(`${name} must be an integer between ${min} and ${max} (got "${v}")`);
      return fallback;
    }
    return Number(v);
  }

  bool(name: string, fallback: boolean): boolean {
    const v = this.raw(name)?.toLowerCase();
    if (v === undefined) return fallback;
    if (['true', '1', 'yes'].includes(v)) return true;
    if (['false', '0', 'no'].includes(v)) return false;
    this.problems.push(`${name} must be true or false (got "${v}")`);
    return fallback;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    if (!(allowed as readonly string[]).includes(v)) {
      this.problems.push(`${name} must be one of ${allowed.join(', ')} (got "${v}")`);
      return fallback;
    }
    return v as T;
  }

  /** `first-last`, both ends included. */
  range(name: string, fallback: { first: number; last: number }, min: number, max: number) {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    const m = /^(\d+)\s*-\s*(\d+)$/.exec(v);
    const [first, last] = m ? [Number(m[1]), Number(m[2])] : [NaN, NaN];
    if (!(first >= min && first <= last && last <= max)) {
      this.problems.push(`${name} must be a range first-last between ${min} and ${max} (got "${v}")`);
      return fallback;
    }
    return { first, last };
  }

  size(name: string, fallback: string, min?: string, max?: string): number {
    const v = (this.raw(name) ?? fallback).toLowerCase();
    const m = /^(\d+)\s*(b|kb|mb|gb)?$/.exec(v);
    if (!m) {
      this.problems.push(`${name} must be a size such as 512kb, 10mb or 2gb (got "${v}")`);
      return parseSize(fallback);
    }
    const bytes = Number(m[1]) * SIZE_UNITS[m[2] ?? 'b'];
    if ((min !== undefined && bytes < parseSize(min)) || (max !== undefined && bytes > parseSize(max))) {
      this.problems.push(`${name} must be a size between ${min ?? '0b'} and ${max ?? 'any'} (got "${v}")`);
      return parseSize(fallback);
    }
    return bytes;
  }

  allowList(name: string): AllowList {
    const parsed = parseAllowList(this.raw(name) ?? '');
    if (typeof parsed === 'string') {
      this.problems.push(
        `${name} must be a comma-separated list of hosts, host:port or CIDR ranges, each optionally scoped as <environment>=<entry> (${parsed})`,
      );
      return { endpoints: [], hosts: [], ranges: [] };
    }
    return parsed;
  }

  endpoints(name: string): Endpoint[] {
    const parsed = parseEndpoints(this.raw(name) ?? '');
    if (typeof parsed === 'string') {
      this.problems.push(
        `${name} must be a comma-separated list of host:port, each optionally scoped as <environment>=host:port (${parsed})`,
      );
      return [];
    }
    return parsed;
  }

  url(name: string, fallback: string | null, protocols: readonly string[]): string | null {
    const v = this.raw(name) ?? fallback;
    if (v === null) return null;
    try {
      const u = new URL(v);
      if (!protocols.includes(u.protocol.replace(/:$/, ''))) throw new Error('protocol');
      return v;
    } catch {
      // Never echo the value: URLs carry credentials.
      this.problems.push(`${name} must be a URL with scheme ${protocols.join(' or ')}`);
      return fallback;
    }
  }
}

function parseSize(s: string): number {
  const m = /^(\d+)\s*(b|kb|mb|gb)?$/.exec(s.toLowerCase());
  return m ? Number(m[1]) * SIZE_UNITS[m[2] ?? 'b'] : 0;
}
