/** The result of coercing one text value, and the text helpers every type's rules share. */

/** A value of a schema type, or NULL. */
export type Value = boolean | number | bigint | string | null;

/** Why a text is not a value of its column's type (one sentence). */
export class Invalid {
  constructor(readonly reason: string) {}
}

export type Coerced = Value | Invalid;

/** `'value'` for a reason, cut to 100 characters. */
export function quoted(value: string): string {
  return `'${value.length > 100 ? `${value.slice(0, 100)}…` : value}'`;
}

export function fail(reason: string): Invalid {
  return new Invalid(reason);
}

export function trimmed(raw: string): string {
  const n = raw.length;
  if (n === 0) return raw;
  const a = raw.charCodeAt(0);
  const b = raw.charCodeAt(n - 1);
  return a > 0x20 && a < 0x7f && b > 0x20 && b < 0x7f ? raw : raw.trim();
}

export function isNullToken(s: string): boolean {
  switch (s.length) {
    case 0:
      return true;
    case 2:
      return s === '\\N' || s === 'NA';
    case 3:
      return s === 'N/A';
    case 4:
      return s === 'NULL' || s === 'null';
    default:
      return false;
  }
}

export function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}
