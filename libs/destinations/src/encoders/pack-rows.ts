// Loaded in the stage thread: type-only imports.
import type { JsonRowsPayload } from '../destination';

const utf8 = new TextEncoder();

/**
 * The rows as one JsonRowsPayload: joined by commas and encoded once. The buffer is the payload's
 * own (never a slice of a shared pool), so the stage thread can transfer it.
 */
export function packRows(rows: string[], lines: ArrayLike<number>): JsonRowsPayload {
  const bytes = utf8.encode(rows.join(','));
  const ends = new Int32Array(rows.length);
  // Only ASCII encodes to as many bytes as it has characters: then a row's length is its byte length.
  const ascii = bytes.length === rows.length - 1 + rows.reduce((n, row) => n + row.length, 0);
  let at = 0;
  for (let r = 0; r < rows.length; r++) {
    at += ascii ? rows[r].length : Buffer.byteLength(rows[r]);
    ends[r] = at++;
  }
  return { kind: 'json-rows', bytes, ends, lines: Int32Array.from(lines) };
}

/** Rows `from` to `to` (exclusive) of a payload, as a payload owning its own buffers. */
export function sliceRows(p: JsonRowsPayload, from: number, to: number): JsonRowsPayload {
  const start = from === 0 ? 0 : p.ends[from - 1] + 1;
  const ends = p.ends.slice(from, to);
  for (let r = 0; r < ends.length; r++) ends[r] -= start;
  const end = to > from ? p.ends[to - 1] : start;
  return { kind: 'json-rows', bytes: p.bytes.slice(start, end), ends, lines: p.lines.slice(from, to) };
}
