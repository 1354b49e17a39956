/**
 * The json-rows encoder's CSV form: rows of a clean CSV chunk (one the fast path's byte check
 * passed, libs/readers/src/fastpath/csv-check.ts) written as JSON object texts straight from
 * their fields, in the stage thread, with the same text as the typed path (reader, coercers,
 * rowJsonWriter) gives for them: no row array, typed batch or value object per row. The check
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
import { csvChars } from '@tapyard/readers';
import { jsonValue, namePrefixes } from './json-value';
import { packRows } from './pack-rows';

const LF = 10;
const CR = 13;
const ZERO = 0x30;
const MINUS = 0x2d;
const DOT = 0x2e;

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
 * Whether a double's text is already what String() writes for its value: at most 15 significant
 * digits (so no shorter text reads back to the same double: DBL_DIG), no sign but `-` on a non-zero
 * value, no leading zeros, a fraction without trailing zeros, no exponent, and at least 1e-6 (below,
 * String() writes an exponent). Converting costs more than the rest of a row's JSON.
 */
function shortestDouble(t: string, s: number, e: number): boolean {
  let p = t.charCodeAt(s) === MINUS ? s + 1 : s;
  const intStart = p;
  while (p < e && isDigit(t.charCodeAt(p))) p++;
  const intDigits = p - intStart;
  if (intDigits === 0 || (intDigits > 1 && t.charCodeAt(intStart) === ZERO)) return false;
  const zeroInt = intDigits === 1 && t.charCodeAt(intStart) === ZERO;
  if (p === e) return !zeroInt && intDigits <= 15;
  if (t.charCodeAt(p) !== DOT || p + 1 === e || t.charCodeAt(e - 1) === ZERO) return false;
  const fracStart = ++p;
  while (p < e && isDigit(t.charCodeAt(p))) p++;
  if (p !== e) return false;
  if (!zeroInt) return intDigits + (e - fracStart) <= 15;
  let lead = fracStart;
  while (t.charCodeAt(lead) === ZERO) lead++;
  return lead - fracStart < 6 && e - lead <= 15;
}

function isDigit(c: number): boolean {
  return c >= ZERO && c <= ZERO + 9;
}

/**
 * Rows per payload at most: a staged part (4 MiB, some 100,000 narrow rows) goes out in pieces, so the
 * loader sends a part's first rows while the stage thread writes the rest, instead of waiting for all.
 */
export const CSV_PIECE_ROWS = 4096;

export function createCsvEncoder(
  columns: SchemaField[],
  fileColumns: string[],
  csv: Pick<CsvAttributes, 'delimiter' | 'quote' | 'escape'>,
): (chunk: CsvChunkPayload) => Generator<JsonRowsPayload> {
  const { delim, quote, esc } = csvChars(csv);
  const width = fileColumns.length;
  const names = namePrefixes(columns);
  // Per output column: the file column it reads (-1: none, always null), its kind and coercer.
  const source = columns.map((c) => fileColumns.indexOf(c.name));
  const kinds = columns.map((c) => KINDS[c.type]);
  const coerce = columns.map((c) => coercer(c.type, true, c));
  // The current record's fields: where each starts and ends in the chunk's text, and whether it
  // was quoted (1) or quoted with escapes to undo (2). Reused: nothing is allocated per record.
  const starts = new Int32Array(width);
  const ends = new Int32Array(width);
  const quoted = new Uint8Array(width);

  const unescape = (t: string, s: number, e: number): string => {
    let out = '';
    let from = s;
    for (let p = s; p < e; p++) {
      const c = t.charCodeAt(p);
      // A doubled quote is one quote; an escape drops itself before the quote or itself only.
      const drop =
        esc < 0
          ? c === quote
          : c === esc && p + 1 < e && (t.charCodeAt(p + 1) === quote || t.charCodeAt(p + 1) === esc);
      if (drop) {
        out += t.slice(from, p);
        from = ++p;
      }
    }
    return out + t.slice(from, e);
  };

  const value = (t: string, k: number): string => {
    const f = source[k];
    if (f < 0) return 'null';
    const s = starts[f];
    const e = ends[f];
    const q = quoted[f];
    if (q === 0 && s === e) return 'null';
    switch (kinds[k]) {
      case K_STRING:
        return JSON.stringify(q === 2 ? unescape(t, s, e) : t.slice(s, e));
      case K_INTEGER: {
        // Digits without a sign or leading zero are their own JSON (a bigint too: every digit).
        const c = t.charCodeAt(s);
        const first = c === MINUS && e - s > 1 ? t.charCodeAt(s + 1) : c;
        if ((first > ZERO && first <= ZERO + 9) || (e - s === 1 && c === ZERO)) return t.slice(s, e);
        break;
      }
      case K_BOOLEAN:
        return TRUE_START[t.charCodeAt(s)] === 1 ? 'true' : 'false';
      case K_DATE:
        return `"${t.slice(s, e)}"`;
      case K_DOUBLE:
        if (shortestDouble(t, s, e)) return t.slice(s, e);
    }
    const v = coerce[k](t.slice(s, e));
    // The check passed it: a refusal here is a disagreement between the two, never data to send.
    if (v instanceof Invalid)
      throw new Error(`the CSV fast path let through a value its coercer refuses: ${v.reason}`);
    return jsonValue(v);
  };

  return function* (chunk) {
    const b = chunk.bytes;
    const t = Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8');
    const n = t.length;
    let line = chunk.line;
    let i = 0;
    for (let done = 0; done < chunk.rows;) {
      const count = Math.min(CSV_PIECE_ROWS, chunk.rows - done);
      const rows = new Array<string>(count);
      const lines = new Array<number>(count);
      for (let r = 0; r < count; r++) {
        lines[r] = line;
        for (let f = 0; f < width; f++) {
          if (t.charCodeAt(i) === quote) {
            let p = i + 1;
            let escapes = false;
            for (;;) {
              const c = t.charCodeAt(p);
              if (c === quote) {
                if (esc < 0 && t.charCodeAt(p + 1) === quote) {
                  escapes = true;
                  p += 2;
                  continue;
                }
                break;
              }
              if (c === esc) {
                const next = t.charCodeAt(p + 1);
                if (next === quote || next === esc) {
                  escapes = true;
                  p += 2;
                  continue;
                }
              }
              // A line break inside the quotes: \r\n counts once, as the reader counts lines.
              if (c === LF || (c === CR && t.charCodeAt(p + 1) !== LF)) line++;
              p++;
            }
            starts[f] = i + 1;
            ends[f] = p;
            quoted[f] = escapes ? 2 : 1;
            i = p + 1;
          } else {
            let p = i;
            for (; p < n; p++) {
              const c = t.charCodeAt(p);
              if (c === delim || c === LF || c === CR) break;
            }
            starts[f] = i;
            ends[f] = p;
            quoted[f] = 0;
            i = p;
          }
          // The delimiter after every field but the last.
          if (f + 1 < width) i++;
        }
        // The record's line break (none after the chunk's last record, possibly).
        if (i < n) i += t.charCodeAt(i) === CR && t.charCodeAt(i + 1) === LF ? 2 : 1;
        line++;
        let row = '';
        for (let k = 0; k < names.length; k++) row += names[k] + value(t, k);
        rows[r] = names.length === 0 ? '{}' : `${row}}`;
      }
      done += count;
      yield packRows(rows, lines);
    }
  };
}
