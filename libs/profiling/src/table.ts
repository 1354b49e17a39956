import { uniqueNames } from './normalize';

/** Helpers for ragged tables: a missing cell reads as empty, an extra cell opens a new column. */

export function columnCount(header: string[], rows: string[][]): number {
  let count = header.length;
  for (const row of rows) count = Math.max(count, row.length);
  return count;
}

export function columnCells(rows: string[][], index: number): string[] {
  return rows.map((row) => row[index] ?? '');
}

/** Column names for `count` columns; cells the header lacks get `column_<n>`. */
export function columnNames(header: string[], count: number): string[] {
  return uniqueNames(Array.from({ length: count }, (_, i) => header[i] ?? ''));
}
