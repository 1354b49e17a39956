/**
 * What Snowflake answered to a PUT and a COPY INTO, read before the delivery counts as done. Neither
 * statement fails for every file it did not take: a PUT answers a status per file (ERROR among them),
 * a COPY a status per file loaded (PARTIALLY_LOADED and LOAD_FAILED among them, with ON_ERROR other
 * than the default). A delivery trusting "no error" alone could report rows loaded that are not there.
 */
type Row = Record<string, unknown>;

/** A column of the answer, whatever case the server gave its name. */
function field(row: Row, name: string): unknown {
  for (const key of Object.keys(row)) if (key.toLowerCase() === name) return row[key];
  return undefined;
}

const text = (v: unknown): string => (v === undefined || v === null ? '' : String(v).slice(0, 200));

/** null when the PUT staged `file`; else why it did not. */
export function putProblem(rows: readonly Row[], file: string): string | null {
  const row = rows.find((r) => field(r, 'source') === file);
  if (!row) return `Snowflake's answer to the PUT names no file ${file}`;
  const status = text(field(row, 'status'));
  if (status === 'UPLOADED' || status === 'SKIPPED') return null;
  const message = text(field(row, 'message'));
  return `Snowflake did not stage ${file}: ${status || 'no status'}${message ? ` (${message})` : ''}`;
}

/**
 * null when the staged file's `expected` rows are in the table: loaded by this COPY, or by an earlier
 * delivery of the same job (Snowflake skips a file its load history has: "0 files processed", or the
 * file LOAD_SKIPPED); else why not.
 */
export function copyProblem(rows: readonly Row[], expected: number): string | null {
  if (rows.length === 0) return 'Snowflake answered the COPY INTO with no status';
  for (const row of rows) {
    const status = text(field(row, 'status'));
    if (/^Copy executed with 0 files processed/.test(status) || status === 'LOAD_SKIPPED') continue;
    const file = text(field(row, 'file'));
    if (status === 'LOADED') {
      const loaded = Number(field(row, 'rows_loaded'));
      if (loaded === expected) continue;
      return `Snowflake loaded ${Number.isFinite(loaded) ? loaded : 'an unknown number'} of the ${expected} rows of ${file}`;
    }
    const first = text(field(row, 'first_error'));
    return `Snowflake did not load ${file}: ${status || 'no status'}${first ? ` (${first})` : ''}`;
  }
  return null;
}
