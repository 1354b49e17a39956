/**
 * A query result as CSV (RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled;
 * NULL is an empty field). Text that a spreadsheet would run as a formula (`=`, `+`, `-`, `@` first, not a
 * number) gets a leading `'`, so opening the download cannot execute what a table's rows contain.
 */
export function toCsv(columns: readonly string[], rows: readonly (readonly unknown[])[]): string {
  const lines = [columns.map(field), ...rows.map((r) => r.map(field))];
  return lines.map((cells) => cells.join(',')).join('\r\n') + '\r\n';
}

const FORMULA_START = /^[=+\-@\t\r]/;
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

function field(value: unknown): string {
  if (value === null || value === undefined) return '';
  let text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  if (FORMULA_START.test(text) && !NUMBER.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}
