// Loaded in the stage thread: type-only imports.
import type { SchemaField, Value } from '@tapyard/model';

/**
 * One value as JSON text, as JSON.stringify writes it, except bigints: every digit, as a number
 * (JSON.stringify refuses them).
 */
export function jsonValue(v: Value): string {
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v);
    case 'number':
      return Number.isFinite(v) ? String(v) : 'null';
    case 'bigint':
      return String(v);
    case 'boolean':
      return v ? 'true' : 'false';
    default:
      return 'null';
  }
}

/** What precedes each column's value in a row's JSON object text: `{"name":`, then `,"name":`. */
export function namePrefixes(columns: SchemaField[]): string[] {
  return columns.map((c, i) => `${i === 0 ? '{' : ','}${JSON.stringify(c.name)}:`);
}
