import { maskUrlCredentials } from '@tapyard/model';
import { PackageSpecError } from './errors';

// PEP 508 names and PEP 440-style version clauses only: no URLs, paths, markers or pip options,
// so nothing but an index lookup can follow from a spec.
const NAME = '[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?';
const VERSION = '[A-Za-z0-9][A-Za-z0-9.*+!_-]*';
const CLAUSE = `(?:===|==|!=|~=|<=|>=|<|>)\\s*${VERSION}`;
const SPEC = new RegExp(
  `^(${NAME})\\s*(?:\\[\\s*(${NAME}(?:\\s*,\\s*${NAME})*)\\s*\\])?\\s*(${CLAUSE}(?:\\s*,\\s*${CLAUSE})*)?$`,
);
const MAX_SPEC_LENGTH = 200;

/** PEP 503: names compare case-insensitively with runs of -, _ and . equal. */
export function normalizeName(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, '-');
}

/** One canonical spelling per requirement, e.g. " Six == 1.16.0 " -> "six==1.16.0". */
export function normalizePackageSpec(spec: string): string {
  const trimmed = typeof spec === 'string' ? spec.trim() : '';
  const match = trimmed.length <= MAX_SPEC_LENGTH ? SPEC.exec(trimmed) : null;
  if (!match) {
    throw new PackageSpecError(
      spec,
      `invalid package requirement "${redact(String(spec)).slice(0, 80)}": use a package name with an optional ` +
        'version such as "requests==2.31.0" (URLs, paths and pip options are not allowed)',
    );
  }
  const [, name, extras, clauses] = match;
  const extraList = extras ? [...new Set(extras.split(',').map((e) => normalizeName(e.trim())))].sort() : [];
  const clauseList = clauses
    ? clauses
        .split(',')
        .map((c) => c.replace(/\s+/g, '').toLowerCase())
        .sort()
    : [];
  return normalizeName(name) + (extraList.length ? `[${extraList.join(',')}]` : '') + clauseList.join(',');
}

/** Normalised, de-duplicated and sorted; one requirement per package. */
export function normalizePackageSpecs(specs: readonly string[]): string[] {
  const byName = new Map<string, string>();
  for (const spec of specs) {
    const normal = normalizePackageSpec(spec);
    const name = packageName(normal);
    const seen = byName.get(name);
    if (seen !== undefined && seen !== normal) {
      throw new PackageSpecError(spec, `package "${name}" is listed twice with different requirements`);
    }
    byName.set(name, normal);
  }
  return [...byName.values()].sort();
}

/** The normalised name at the start of a normalised spec. */
export function packageName(normalSpec: string): string {
  return /^[a-z0-9-]+/.exec(normalSpec)?.[0] ?? normalSpec;
}

/** Credentials in anything URL-like never reach an error message. */
export function redact(text: string): string {
  return maskUrlCredentials(text, '***');
}
