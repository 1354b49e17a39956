/**
 * The json-rows encoder's CSV form: rows of a clean CSV chunk (one the fast path's byte check
 * passed, libs/readers/src/fastpath/csv-check.ts) written as JSON object texts straight from
 * their fields' bytes into the payload's bytes, in the stage thread, with the same text as the
 * typed path (reader, coercers, rowJsonWriter) gives for them: no string per row (their building,
 * joining and encoding cost twice the rest), typed batch or value object per row. The check
 * guarantees what is relied on here: exactly one field per file column, no quoted value outside
 * string columns, and in those only plain values of the column's type (no spaces, no null tokens).
 * The common shapes are written from the field's text; the others (a `+` or leading zeros, floats,
 * decimals, timestamps, doubles String() would write otherwise) go through the column's own
 * coercer, so their values are the reference's.
 *
 * Loaded in the stage thread: nothing heavier than the value types and the CSV characters.
 */
import type { CsvAttributes, SchemaField } from '@tapyard/model';
import { Invalid, coercer } from '@tapyard/model';
import type { CsvChunkPayload, JsonRowsPayload } from '../destination';
import { csvChars, quotedFieldEnd } from '@tapyard/readers';
import { jsonValue, namePrefixes } from './json-value';

const LF = 10;
const CR = 13;
const ZERO = 0x30;
const MINUS = 0x2d;
const DOT = 0x2e;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN = 0x7b;
const CLOSE = 0x7d;

const utf8 = new TextEncoder();
const NULL = utf8.encode('null');
const TRUE = utf8.encode('true');
const FALSE = utf8.encode('false');

const K_STRING = 0;
const K_INTEGER = 1;
const K_BOOLEAN = 2;
const K_DATE = 3;
const K_DOUBLE = 4;
/** Floats, decimals, timestamps: their coercer writes the value. */
const K_COERCED = 5;

const KINDS: Record<SchemaField['type'], number> = {
  string: K_STRING,
  int: K_INTEGER,
  bigint: K_INTEGER,
  boolean: K_BOOLEAN,
  date: K_DATE,
  float: K_COERCED,
  double: K_DOUBLE,
  decimal: K_COERCED,
  timestamp: K_COERCED,
};

/** The booleans the check lets through start with one of these when true (`t`, `true`, `y`, `yes`, `1`). */
const TRUE_START = new Uint8Array(128);
for (const c of 'tTyY1') TRUE_START[c.charCodeAt(0)] = 1;

/**
 * Where a double's text (bytes `s` to `e`) stops being what String() writes for its value, or -1 when
 * it is not: String() writes the text without its fraction's trailing zeros (and without a point left
 * bare) when it has at most 15 significant digits (then no other text of as few digits reads back to
 * the same double: DBL_DIG), no sign but `-` on a non-zero value, no leading zeros, no exponent, and is
 * at least 1e-6 (below, String() writes an exponent). Converting costs more than the rest of a row's
 * JSON.
 */
function shortestEnd(t: Uint8Array, s: number, e: number): number {
  let p = t[s] === MINUS ? s + 1 : s;
  const intStart = p;
  while (p < e && isDigit(t[p])) p++;
  const intDigits = p - intStart;
  if (intDigits === 0 || (intDigits > 1 && t[intStart] === ZERO)) return -1;
  const zeroInt = intDigits === 1 && t[intStart] === ZERO;
  const intEnd = p;
  if (p < e && t[p] !== DOT) return -1;
  const fracStart = ++p;
  while (p < e && isDigit(t[p])) p++;
  if (p < e) return -1;
  let end = e;
  while (end > fracStart && t[end - 1] === ZERO) end--;
  // No fraction left: the integer alone (a zero, maybe negative, is left to the coercer).
  if (end <= fracStart) return !zeroInt && intDigits <= 15 ? intEnd : -1;
  if (!zeroInt) return intDigits + (end - fracStart) <= 15 ? end : -1;
  let lead = fracStart;
  while (t[lead] === ZERO) lead++;
  return lead - fracStart < 6 && end - lead <= 15 ? end : -1;
}

function isDigit(c: number): boolean {
  return c >= ZERO && c <= ZERO + 9;
}

/**
 * Rows per payload at most: a staged part (4 MiB, some 100,000 narrow rows) goes out in pieces, so the
 * loader sends a part's first rows while the stage thread writes the rest, instead of waiting for all.
 */
export const CSV_PIECE_ROWS = 4096;

interface Cursor {
  i: number;
  line: number;
}

export function createCsvEncoder(
  columns: SchemaField[],
  fileColumns: string[],
  csv: Pick<CsvAttributes, 'delimiter' | 'quote' | 'escape'>,
): (chunk: CsvChunkPayload) => Generator<JsonRowsPayload> {
  const { delim, quote, esc } = csvChars(csv);
  const width = fileColumns.length;
  const names = namePrefixes(columns).map((n) => utf8.encode(n));
  const ncols = names.length;
  const nameBytes = names.reduce((sum, n) => sum + n.length, 0);
  // Per output column: the file column it reads (-1: none, always null), its kind and coercer.
  const source = Int32Array.from(columns, (c) => fileColumns.indexOf(c.name));
  const kinds = Uint8Array.from(columns, (c) => KINDS[c.type]);
  const coerce = columns.map((c) => coercer(c.type, true, c));
  // The bytes that end an unquoted field.
  const stops = new Uint8Array(256);
  for (const c of [delim, LF, CR]) stops[c] = 1;
  // The current record's fields: where each starts and ends in the chunk's bytes, and whether it
  // was quoted (1) or quoted with escapes to undo (2). Reused: nothing is allocated per record.
  const starts = new Int32Array(width);
  const ends = new Int32Array(width);
  const quoted = new Uint8Array(width);
  // The piece being written: rows go from the chunk's bytes to these bytes, with no string per row
  // or per plain field. Each piece gets memory of its own, sized from the bytes per row written so
  // far (a tenth more), and goes out as a view of it: a copy to size cost the stage thread a tenth
  // of its time, in copying and collecting.
  let out = new Uint8Array(0);
  let perRow = 0;

  const grow = (at: number, bytes: number): Uint8Array<ArrayBuffer> => {
    const bigger = new Uint8Array(Math.max(out.length * 2, at + bytes));
    bigger.set(out.subarray(0, at));
    return (out = bigger);
  };

  const unescape = (t: string): string => {
    let text = '';
    let from = 0;
    for (let p = 0; p < t.length; p++) {
      const c = t.charCodeAt(p);
      // A doubled quote is one quote; an escape drops itself before the quote or itself only.
      const drop =
        esc < 0
          ? c === quote
          : c === esc && p + 1 < t.length && (t.charCodeAt(p + 1) === quote || t.charCodeAt(p + 1) === esc);
      if (drop) {
        text += t.slice(from, p);
        from = ++p;
      }
    }
    return text + t.slice(from);
  };

  /** The JSON text of column `k`'s value [s, e) when it is not written from its bytes. */
  const slowText = (b: Buffer, k: number, s: number, e: number, q: number): string => {
    if (kinds[k] === K_STRING) {
      const text = b.toString('utf8', s, e);
      return JSON.stringify(q === 2 ? unescape(text) : text);
    }
    const v = coerce[k](b.toString('utf8', s, e));
    // The check passed it: a refusal here is a disagreement between the two, never data to send.
    if (v instanceof Invalid)
      throw new Error(`the CSV fast path let through a value its coercer refuses: ${v.reason}`);
    return jsonValue(v);
  };

  /**
   * Writes `count` records from `cursor` (the chunk's next record: its byte and line, moved past
   * them) into `out` (from 0), their ends and lines into `rowEnds` and `lines`; returns the bytes
   * written. One function, its buffer and position in locals the compiler keeps in registers: as
   * closure variables (a `put` helper's), each byte written also stored the position back, and the
   * conversion took 60 % longer.
   */
  const piece = (
    b: Buffer,
    cursor: Cursor,
    count: number,
    rowEnds: Int32Array,
    lines: Int32Array,
  ): number => {
    const n = b.length;
    let { i, line } = cursor;
    let o = out;
    let a = 0;
    for (let r = 0; r < count; r++) {
      lines[r] = line;
      const recStart = i;
      for (let f = 0; f < width; f++) {
        if (b[i] === quote) {
          const end = quotedFieldEnd(b, i, quote, esc);
          const p = end >> 1;
          // A line break inside the quotes: \r\n counts once, as the reader counts lines.
          for (let k = i + 1; k < p; k++) {
            const c = b[k];
            if (c === LF || (c === CR && b[k + 1] !== LF)) line++;
          }
          starts[f] = i + 1;
          ends[f] = p;
          quoted[f] = (end & 1) === 1 ? 2 : 1;
          i = p + 1;
        } else {
          let p = i;
          while (p < n && stops[b[p]] === 0) p++;
          starts[f] = i;
          ends[f] = p;
          quoted[f] = 0;
          i = p;
        }
        // The delimiter after every field but the last.
        if (f + 1 < width) i++;
      }
      // The record's line break (none after the chunk's last record, possibly).
      if (i < n) i += b[i] === CR && b[i + 1] === LF ? 2 : 1;
      line++;
      // What the row takes at most when every value is written from its bytes: its names, its
      // fields' bytes, and per column 6 more (two quotes; `null` for nothing; `true` for `1`), the
      // closing brace and the comma (`{}` and the comma without columns). A value written from
      // text makes room for itself.
      const bound = nameBytes + (i - recStart) + ncols * 6 + 3;
      if (a + bound > o.length) o = grow(a, bound);
      if (ncols === 0) {
        o[a++] = OPEN;
        o[a++] = CLOSE;
      }
      for (let k = 0; k < ncols; k++) {
        const name = names[k];
        for (let p = 0; p < name.length; p++) o[a++] = name[p];
        const f = source[k];
        const s = f < 0 ? 0 : starts[f];
        const e = f < 0 ? 0 : ends[f];
        const q = f < 0 ? 0 : quoted[f];
        let fast = true;
        if (q === 0 && s === e) for (let x = 0; x < 4; x++) o[a++] = NULL[x];
        else {
          switch (kinds[k]) {
            case K_STRING: {
              // Valid UTF-8 (the check saw to it) without a quote, a backslash or a control
              // character is its own JSON string text, as JSON.stringify would write it.
              let p = s;
              if (q !== 2) while (p < e && b[p] >= 0x20 && b[p] !== QUOTE && b[p] !== BACKSLASH) p++;
              if (p < e || q === 2) fast = false;
              else {
                o[a++] = QUOTE;
                for (let x = s; x < e; x++) o[a++] = b[x];
                o[a++] = QUOTE;
              }
              break;
            }
            case K_INTEGER: {
              // Digits without a sign or leading zero are their own JSON (a bigint too: every digit).
              const c = b[s];
              const first = c === MINUS && e - s > 1 ? b[s + 1] : c;
              if ((first > ZERO && first <= ZERO + 9) || (e - s === 1 && c === ZERO))
                for (let x = s; x < e; x++) o[a++] = b[x];
              else fast = false;
              break;
            }
            case K_BOOLEAN: {
              const word = TRUE_START[b[s]] === 1 ? TRUE : FALSE;
              for (let x = 0; x < word.length; x++) o[a++] = word[x];
              break;
            }
            case K_DATE:
              o[a++] = QUOTE;
              for (let x = s; x < e; x++) o[a++] = b[x];
              o[a++] = QUOTE;
              break;
            case K_DOUBLE: {
              const end = shortestEnd(b, s, e);
              if (end > 0) for (let x = s; x < end; x++) o[a++] = b[x];
              else fast = false;
              break;
            }
            default:
              fast = false;
          }
        }
        if (!fast) {
          const text = slowText(b, k, s, e, q);
          // Its own room, and again the whole row's bound: the rest stays within it.
          if (a + text.length * 3 + bound > o.length) o = grow(a, text.length * 3 + bound);
          a += utf8.encodeInto(text, o.subarray(a)).written;
        }
      }
      if (ncols > 0) o[a++] = CLOSE;
      rowEnds[r] = a;
      // Rows are stored comma-separated (as packRows joins them): none after the last.
      if (r + 1 < count) o[a++] = COMMA;
    }
    cursor.i = i;
    cursor.line = line;
    return a;
  };

  return function* (chunk) {
    const b = Buffer.from(chunk.bytes.buffer, chunk.bytes.byteOffset, chunk.bytes.byteLength);
    const cursor = { i: 0, line: chunk.line };
    // Before a first piece: the chunk's bytes per row, each column's name and some quotes.
    perRow ||= nameBytes + ncols * 2 + 2 + b.length / Math.max(chunk.rows, 1);
    for (let done = 0; done < chunk.rows;) {
      const count = Math.min(CSV_PIECE_ROWS, chunk.rows - done);
      const rowEnds = new Int32Array(count);
      const lines = new Int32Array(count);
      out = new Uint8Array(Math.ceil(perRow * count * 1.1) + 64);
      const at = piece(b, cursor, count, rowEnds, lines);
      perRow = at / count;
      done += count;
      yield { kind: 'json-rows', bytes: out.subarray(0, at), ends: rowEnds, lines };
    }
  };
}
