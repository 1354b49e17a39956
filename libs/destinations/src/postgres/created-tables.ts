import { createHash } from 'node:crypto';
import { PG_MAX_IDENTIFIER_BYTES, REJECTS_SUFFIX } from '@tapyard/pipelines';

const HASH_CHARS = 12;

export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * The rejects table beside `table`: `<table>_rejects` while that fits in 62 bytes, otherwise the
 * table's first 42 characters, `_`, 12 hex digits of its SHA-256 and `_rejects` (63 bytes). PostgreSQL
 * would truncate a longer name, possibly into the table's own name; the two forms differ in length,
 * so a hashed name never equals a plain one, and data tables may not end in `_rejects` at all.
 * Table names are ASCII (validated at save), so characters are bytes here.
 */
export function rejectsTable(table: string): string {
  const plain = `${table}${REJECTS_SUFFIX}`;
  if (Buffer.byteLength(plain) < PG_MAX_IDENTIFIER_BYTES) return plain;
  const hash = createHash('sha256').update(table).digest('hex').slice(0, HASH_CHARS);
  const keep = PG_MAX_IDENTIFIER_BYTES - REJECTS_SUFFIX.length - HASH_CHARS - 1;
  return `${table.slice(0, keep)}_${hash}${REJECTS_SUFFIX}`;
}
