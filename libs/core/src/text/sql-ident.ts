import { ValidationError } from '@tapyard/model';

/** PostgreSQL keeps the first 63 bytes of an identifier (NAMEDATALEN - 1) and silently drops the rest. */
export const PG_MAX_IDENTIFIER_BYTES = 63;

/**
 * `name` as a double-quoted SQL identifier (`a"b` → `"a""b"`), the one way Tapyard writes a name into
 * SQL text. Callers validate names against their own rules first; this refuses what no quoting makes
 * exact: an empty name, a NUL (which ends the text on its way to the server), and a name longer than
 * PostgreSQL keeps, which it would truncate into another, possibly existing, one.
 */
export function quoteIdent(name: string): string {
  if (name.length === 0) throw new ValidationError('an SQL identifier may not be empty');
  if (name.includes('\0')) throw new ValidationError('an SQL identifier may not contain a NUL character');
  if (Buffer.byteLength(name) > PG_MAX_IDENTIFIER_BYTES) {
    throw new ValidationError(
      `the SQL identifier '${name.slice(0, PG_MAX_IDENTIFIER_BYTES)}…' is longer than ${PG_MAX_IDENTIFIER_BYTES} bytes`,
    );
  }
  return `"${name.replace(/"/g, '""')}"`;
}
