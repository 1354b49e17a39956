/**
 * A batch as it crosses into a CodeGen script's sandbox: one binary frame, by column. JSON text costs
 * both sides most of a script's overhead (building and writing a 200 KB UTF-8 string per batch here,
 * parsing it there); packed numbers and one text blob per column are copies on both sides.
 *
 * Frame: u32 length of the rest | u32 header length | header (JSON) | sections, one after the other
 * (the two lengths little-endian, the packed values in this host's order: the sandbox runs here).
 * The header: `{"names", "rows", "outputs", "columns": [[encoding, ...section lengths], ...]}`.
 * Each column has one encoding, chosen from its values (not its declared type), and a JSON section
 * whenever the values are not all of one simple kind, so what the driver decodes is always what
 * `JSON.parse` of the former JSON array gave (see runnableScript's driver):
 *   json  [json, bytes]                 the column as a JSON array (bigints as exact integers)
 *   i4    [i4, nulls]                   int32 numbers: Int32Array, then the null rows (Int32Array)
 *   i8    [i8, nulls]                   integers in int64 (safe numbers or bigints): BigInt64Array
 *   f8    [f8, nulls, ints]             finite numbers: Float64Array, then the rows whose value JSON
 *                                       writes as an integer (Python gets an int there, as from JSON)
 *   b1    [b1, nulls]                   booleans: one byte each
 *   s1/s2 [s1|s2, nulls, bytes]         strings without NUL: the null rows, then all of them joined
 *                                       by NUL as one latin-1 (s1) or UTF-16 (s2) text
 * Null rows hold 0 (or "") in the packed data; the null rows' section is an Int32Array.
 */
import type { TypedBatch, Value } from '@tapyard/model';

type Column =
  | { kind: 'json'; text: Buffer }
  | { kind: 'i4' | 'i8' | 'f8' | 'b1'; data: Uint8Array; nulls: Int32Array; ints?: Int32Array }
  | { kind: 's1' | 's2'; nulls: Int32Array; text: Buffer };

/** JSON writes a finite integral number below this as its digits: Python reads it as an int. */
const JSON_DIGITS = 1e21;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

export function batchFrame(batch: TypedBatch, outputs: readonly string[]): Buffer {
  const rows = batch.lines.length;
  const columns = batch.values.map((col, c) => encodeColumn(col, rows, batch.columns[c].type === 'bigint'));
  const specs = columns.map((col) => {
    switch (col.kind) {
      case 'json':
        return ['json', col.text.length];
      case 's1':
      case 's2':
        return [col.kind, col.nulls.length, col.text.length];
      case 'f8':
        return ['f8', col.nulls.length, col.ints?.length ?? 0];
      default:
        return [col.kind, col.nulls.length];
    }
  });
  const header = Buffer.from(
    JSON.stringify({ names: batch.columns.map((c) => c.name), rows, outputs, columns: specs }),
  );
  const parts: Uint8Array[] = [Buffer.alloc(8), header];
  for (const col of columns) {
    if ('data' in col) {
      parts.push(col.data, bytesOf(col.nulls));
      if (col.ints) parts.push(bytesOf(col.ints));
    } else if (col.kind === 'json') parts.push(col.text);
    else parts.push(bytesOf(col.nulls), col.text);
  }
  const frame = Buffer.concat(parts);
  frame.writeUInt32LE(frame.length - 4, 0);
  frame.writeUInt32LE(header.length, 4);
  return frame;
}

function bytesOf(a: Int32Array | Float64Array | BigInt64Array): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

/** What the former encoding wrote: JSON, with bigints as their exact digits. */
function jsonColumn(col: readonly Value[], bigint: boolean): Column {
  const text = bigint
    ? `[${col.map((v) => (typeof v === 'bigint' ? v.toString() : JSON.stringify(v))).join(',')}]`
    : JSON.stringify(col);
  return { kind: 'json', text: Buffer.from(text) };
}

function encodeColumn(col: readonly Value[], rows: number, bigint: boolean): Column {
  // One pass says which packing every value fits.
  let int32 = true;
  let int64 = true;
  let finite = true;
  let bools = true;
  let strings = true;
  let nulls = 0;
  for (let i = 0; i < rows; i++) {
    const v = col[i];
    if (v === null) {
      nulls++;
      continue;
    }
    switch (typeof v) {
      case 'number':
        bools = strings = false;
        if ((v | 0) !== v) {
          int32 = false;
          if (!Number.isSafeInteger(v)) {
            int64 = false;
            // Integral beyond 2^53: JSON writes shortest digits padded with zeros, not the value.
            if (!Number.isFinite(v) || (Number.isInteger(v) && Math.abs(v) < JSON_DIGITS)) finite = false;
          }
        }
        break;
      case 'bigint':
        int32 = finite = bools = strings = false;
        if (v < INT64_MIN || v > INT64_MAX) int64 = false;
        break;
      case 'boolean':
        int32 = int64 = finite = strings = false;
        break;
      case 'string':
        int32 = int64 = finite = bools = false;
        break;
      default:
        return jsonColumn(col, bigint);
    }
    if (!int32 && !int64 && !finite && !bools && !strings) return jsonColumn(col, bigint);
  }
  const nullRows = new Int32Array(nulls);
  if (nulls > 0) for (let i = 0, k = 0; i < rows; i++) if (col[i] === null) nullRows[k++] = i;
  if (nulls === rows || int32) {
    const data = new Int32Array(rows);
    for (let i = 0; i < rows; i++) data[i] = (col[i] as number | null) ?? 0;
    return { kind: 'i4', data: bytesOf(data), nulls: nullRows };
  }
  if (int64) {
    const data = new BigInt64Array(rows);
    for (let i = 0; i < rows; i++) {
      const v = col[i] as number | bigint | null;
      data[i] = v === null ? 0n : BigInt(v);
    }
    return { kind: 'i8', data: bytesOf(data), nulls: nullRows };
  }
  if (finite) {
    const data = new Float64Array(rows);
    const ints: number[] = [];
    for (let i = 0; i < rows; i++) {
      const v = (col[i] as number | null) ?? 0;
      data[i] = v;
      if (col[i] !== null && Number.isInteger(v) && Math.abs(v) < JSON_DIGITS) ints.push(i);
    }
    return { kind: 'f8', data: bytesOf(data), nulls: nullRows, ints: Int32Array.from(ints) };
  }
  if (bools) {
    const data = new Uint8Array(rows);
    for (let i = 0; i < rows; i++) data[i] = col[i] === true ? 1 : 0;
    return { kind: 'b1', data, nulls: nullRows };
  }
  return stringColumn(col as readonly (string | null)[], nullRows) ?? jsonColumn(col, bigint);
}

/**
 * The strings joined by NUL, as latin-1 when every character fits a byte, else as UTF-16 (Python
 * splits them in one call); null when a string holds a NUL itself.
 */
function stringColumn(col: readonly (string | null)[], nulls: Int32Array): Column | null {
  for (const v of col) if (v !== null && v.includes('\0')) return null;
  const joined = col.join('\0');
  const latin1 = !/[\u0100-\uffff]/.test(joined);
  return { kind: latin1 ? 's1' : 's2', nulls, text: Buffer.from(joined, latin1 ? 'latin1' : 'utf16le') };
}
