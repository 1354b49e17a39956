/**
 * A conservative byte-level check of one CSV chunk (whole records, as csv-rows cuts them): is
 * `COPY t (file columns) FROM STDIN (copyCsvOptions(attrs))`, in a session with TimeZone UTC and
 * client_encoding UTF8, certain to store exactly what the reference path stores (readCsv +
 * RowPlan with the `coercer`s, then COPY text), with no row rejected by the reference? `clean:
 * false` is always safe (the caller runs the reference path on the chunk); `clean: true` must
 * never be wrong, so anything not proven equal is refused.
 *
 * Refused (each checked against readers/csv-reader.ts, destinations/src/copy-text.ts and
 * PostgreSQL 15's COPY CSV code):
 * - NUL bytes, invalid UTF-8 (the reference rejects the row, PostgreSQL the whole COPY);
 * - a blank line or a line of spaces and tabs (the reference skips it, PostgreSQL reads a row);
 * - a record starting with `\.` (PostgreSQL's end-of-data marker), also after a line break inside
 *   quotes (PostgreSQL only looks at record starts there; refusing more costs nothing);
 * - a record without exactly the expected number of fields (the reference rejects it; for one
 *   column a blank line is skipped by one and read by the other);
 * - line endings that differ inside the chunk (PostgreSQL takes the first one as the only one).
 *   The verdict names the chunk's line ending: chunks with different ones must not share a COPY;
 * - a quote inside an unquoted field (`5" screen`: literal for the reference, the start of a
 *   quoted section for PostgreSQL) and any text after a closing quote (`"ab"cd`; `"ab"c"d"`
 *   differs: the reference keeps the second quotes, PostgreSQL drops them);
 * - with an escape other than the quote, a doubled quote inside quotes (`"a""b"`: `a"b` for the
 *   reference, `ab` for PostgreSQL). Otherwise their escapes agree: the escape before the quote
 *   or itself is dropped, before anything else it is kept (`\n` stays two characters);
 * - a field longer than the reference's limit (`maxFieldBytes`, default 16 MiB);
 * - in a column that is not a string: a quoted value (`""` is an error to PostgreSQL, NULL to the
 *   reference), surrounding or inner spaces, the reference's null tokens (`NULL`, `\N`, `NA`, …:
 *   NULL to the reference, an error to PostgreSQL), and anything outside these grammars:
 *   - int, bigint: `[+-]?[0-9]+` within the type's range (compared digit by digit, as the coercer
 *     does; newer PostgreSQL versions also read `1_000` and `0x1F`, the reference rejects them);
 *   - float, double: `[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]{1,4})?`, at most 64 bytes,
 *     with a decimal magnitude (10^m <= |v| < 10^(m+1)) within ±37 (real) or ±307 (double), far
 *     from where overflow and underflow rules (the reference's JavaScript arithmetic against
 *     PostgreSQL's strtof/strtod) could differ; zero in any form is fine;
 *   - decimal: `[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)` with no more digits after the point than the
 *     column's scale and before it (leading zeros aside) than precision - scale: PostgreSQL would
 *     round the first and read exponents, NaN and Infinity, which the reference rejects;
 *   - boolean: true/false/yes/no/t/f/y/n/1/0 in any ASCII case (the reference's set; PostgreSQL
 *     reads each the same, and the reference's `t`/`f` output too);
 *   - date: `YYYY-MM-DD`, a real calendar date, year 0001-9999;
 *   - timestamp: a date, or a date, `T`/`t`/space, `HH:MM[:SS[.1-9 digits]]` and an optional zone
 *     `Z`/`z`, `±HH`, `±HH:MM`, `±HHMM`, with hour 00-23, minute and second 00-59 and zone hours
 *     at most 14 (24:00, leap seconds and odd zones are refused even where both would agree);
 *   In these columns an unquoted empty field is NULL to both.
 * Strings: any other text is the same to both, quoted delimiters, line breaks and escaped quotes
 * included; an unquoted empty field is NULL to both, `""` the empty string to both.
 *
 * Only the default null handling is eligible (see fastPathBlocker): a pipeline with its own
 * `nullValues`, or in latin1, never takes the fast path (the caller checks).
 *
 * Speed: one native NUL search and one native UTF-8 validation per chunk, then one pass over the
 * bytes with small lookup tables; nothing is allocated per record or field.
 */
import { isAscii, isUtf8 } from 'node:buffer';
import type { CsvAttributes, DecimalLimits, FieldType } from '@tapyard/model';
import { DEFAULT_MAX_BYTES, positiveOption } from '../batch-sink';
import { csvChars } from '../csv-chars';

export interface CsvCheckOptions extends Pick<CsvAttributes, 'delimiter' | 'quote' | 'escape'> {
  encoding?: CsvAttributes['encoding'];
  /** Must be absent (the default null handling): see fastPathBlocker. */
  nullValues?: string[];
  /** The schema type of each file column, in file order (their number is the expected width). */
  types: readonly FieldType[];
  /** Per file column, a decimal column's precision and scale (absent: none declared). */
  limits?: readonly DecimalLimits[];
  /** The reference's field limit; default 16 MiB. */
  maxFieldBytes?: number;
}

export type CsvLineEnding = 'lf' | 'crlf' | 'cr';

export type CsvVerdict =
  | {
      clean: true;
      records: number;
      /** The chunk's line ending; null when it has none (one record, no line break). */
      eol: CsvLineEnding | null;
    }
  | {
      clean: false;
      reason: string;
      /** Byte position in the chunk where it was decided (0 for the chunk as a whole). */
      offset: number;
    };

/**
 * The check of a buffer that may end inside a record (a part of a file as it arrives): the whole
 * records at its start that end with their line break, checked as one chunk. `end` is where they
 * stop (the rest is an incomplete record, to be checked with what follows), `lines` the physical
 * lines they take (records plus the line breaks inside their quoted fields). A record whose line
 * break is a `\r` at the very end is left for later (the next byte may be its `\n`). `records` is
 * 0 when no record ends in the buffer.
 */
export type CsvPrefixVerdict =
  | { clean: true; records: number; eol: CsvLineEnding | null; end: number; lines: number }
  | Extract<CsvVerdict, { clean: false }>;

/**
 * Why a pipeline's CSV settings can never take the fast path, or null when they can (per chunk,
 * compileCsvCheck then decides).
 */
export function fastPathBlocker(attrs: {
  encoding?: CsvAttributes['encoding'];
  nullValues?: string[];
}): string | null {
  if (attrs.encoding === 'latin1') return 'latin1 files take the reference path';
  // Own null values change what is NULL in both readers' terms and turn the null tokens into errors.
  if (attrs.nullValues !== undefined) return 'a pipeline with its own nullValues takes the reference path';
  return null;
}

/**
 * The quote byte given to PostgreSQL when the pipeline has no quoting: a control character that
 * the check refuses wherever it appears, so PostgreSQL never sees it as a quote.
 */
const NO_QUOTE_SENTINEL = 0x01;

/** The options for `COPY … FROM STDIN (…)` that match the check (any standard_conforming_strings). */
export function copyCsvOptions(opts: Pick<CsvAttributes, 'delimiter' | 'quote' | 'escape'>): string {
  const { delim, quote, esc } = csvChars(opts);
  const lit = (c: number): string => `E'\\x${c.toString(16).padStart(2, '0')}'`;
  const q = quote < 0 ? NO_QUOTE_SENTINEL : quote;
  return `FORMAT csv, DELIMITER ${lit(delim)}, QUOTE ${lit(q)}, ESCAPE ${lit(esc < 0 ? q : esc)}`;
}

const LF = 10;
const CR = 13;
const SPACE = 32;
const TAB = 9;
const BACKSLASH = 0x5c;
const DOT = 0x2e;
const PLUS = 0x2b;
const MINUS = 0x2d;
const COLON = 0x3a;
const ZERO = 0x30;

const T_STRING = 0;
const T_BOOLEAN = 1;
const T_INT = 2;
const T_BIGINT = 3;
const T_FLOAT = 4;
const T_DOUBLE = 5;
const T_DATE = 6;
const T_TIMESTAMP = 7;
const T_DECIMAL = 8;
const TYPE_CODES: Record<FieldType, number> = {
  string: T_STRING,
  boolean: T_BOOLEAN,
  int: T_INT,
  bigint: T_BIGINT,
  float: T_FLOAT,
  double: T_DOUBLE,
  date: T_DATE,
  timestamp: T_TIMESTAMP,
  decimal: T_DECIMAL,
};
const TYPE_NAMES = ['string', 'boolean', 'int', 'bigint', 'float', 'double', 'date', 'timestamp', 'decimal'];

const EOL_LF = 1;
const EOL_CRLF = 2;
const EOL_CR = 3;
const EOL_NAMES: (CsvLineEnding | null)[] = [null, 'lf', 'crlf', 'cr'];

/** Longest value accepted in a column that is not a string (real values are far shorter). */
const MAX_TYPED = 64;

const INT4_POS = Buffer.from('2147483647');
const INT4_NEG = Buffer.from('2147483648');
const INT8_POS = Buffer.from('9223372036854775807');
const INT8_NEG = Buffer.from('9223372036854775808');

const DAYS_IN_MONTH = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Single-byte booleans the reference accepts. */
const BOOL1 = new Uint8Array(256);
for (const c of 'tTfFyYnN10') BOOL1[c.charCodeAt(0)] = 1;

/** Compiles the check for one pipeline's CSV settings and file columns. */
export function compileCsvCheck(opts: CsvCheckOptions): (chunk: Buffer) => CsvVerdict {
  const check = compile(opts);
  return (chunk) => {
    const v = check(chunk, false);
    return v.clean ? { clean: true, records: v.records, eol: v.eol } : v;
  };
}

/**
 * The same check for a buffer that may end inside a record (see CsvPrefixVerdict): the fast path
 * checks each part of an upload where it lies, and cuts it where the check found the last record
 * end, instead of cutting it first and checking the pieces (one pass over the bytes, no copy).
 */
export function compileCsvPrefixCheck(opts: CsvCheckOptions): (b: Buffer) => CsvPrefixVerdict {
  const check = compile(opts);
  return (b) => check(b, true);
}

function compile(opts: CsvCheckOptions): (chunk: Buffer, prefix: boolean) => CsvPrefixVerdict {
  const blocker = fastPathBlocker(opts);
  if (blocker !== null) throw new Error(`the CSV fast path does not apply: ${blocker}`);
  if (opts.types.length === 0) throw new Error('the CSV fast path needs at least one column');
  const { delim, quote, esc } = csvChars(opts);
  const maxField = positiveOption('maxFieldBytes', opts.maxFieldBytes, DEFAULT_MAX_BYTES);
  const types = Uint8Array.from(opts.types.map((t) => TYPE_CODES[t]));
  const ncols = types.length;
  // Digits allowed before and after the point in each decimal column (beyond MAX_TYPED: no limit).
  const decimalLimits = opts.types.map((_, k) => {
    const { precision, scale } = opts.limits?.[k] ?? {};
    const fixed = precision === undefined ? scale : (scale ?? 0);
    return {
      before: precision === undefined ? MAX_TYPED : precision - (fixed ?? 0),
      after: fixed ?? MAX_TYPED,
    };
  });
  const sentinel = quote < 0 ? NO_QUOTE_SENTINEL : -1;

  // Stop tables: the bytes that end a run inside an unquoted string field, a quoted field, and a
  // value of another type.
  const stringStops = new Uint8Array(256);
  const quotedStops = new Uint8Array(256);
  const typedStops = new Uint8Array(256);
  for (const c of [delim, LF, CR, quote]) if (c >= 0) stringStops[c] = 1;
  for (const c of [quote, esc, LF, CR]) if (c >= 0) quotedStops[c] = 1;
  // The quote too: any quote character inside an unquoted value (a digit or letter can be the
  // quote) is literal to the reference and opens a quoted section for PostgreSQL.
  for (const c of [delim, LF, CR, quote]) if (c >= 0) typedStops[c] = 1;

  const refuse = (reason: string, offset: number): CsvPrefixVerdict => ({ clean: false, reason, offset });

  return (b: Buffer, prefix: boolean): CsvPrefixVerdict => {
    const n = b.length;
    const nul = b.indexOf(0);
    if (nul >= 0) return refuse('a NUL byte', nul);
    if (sentinel >= 0) {
      const s = b.indexOf(sentinel);
      if (s >= 0) return refuse('the byte 0x01 (the quote given to PostgreSQL when there is none)', s);
    }
    // A buffer that ends inside a record may end inside a character: those bytes wait for the rest.
    const whole = prefix ? b.subarray(0, n - truncatedUtf8(b)) : b;
    if (!isAscii(whole) && !isUtf8(whole)) return refuse('invalid UTF-8', 0);

    const sStops = stringStops;
    const tStops = typedStops;
    const cols = types;
    let i = 0;
    let records = 0;
    let eol = 0;
    // Prefix mode: the end of the last whole record, and the line breaks inside quotes up to it.
    let end = 0;
    let breaks = 0;
    // Prefix mode, a record that reaches the end of the buffer: it is not checked yet.
    const incomplete = (): CsvPrefixVerdict => ({
      clean: true,
      records,
      eol: EOL_NAMES[eol],
      end,
      lines: records + breaks,
    });
    while (i < n) {
      const recStart = i;
      let recBreaks = 0;
      let c = b[i];
      if (c === LF || c === CR) return refuse('a blank line', i);
      if (c === BACKSLASH && i + 1 >= n && prefix) return incomplete();
      if (c === BACKSLASH && i + 1 < n && b[i + 1] === DOT) return refuse('a line starting with \\.', i);
      let col = 0;
      for (;;) {
        const type = cols[col];
        const start = i;
        if (i < n && b[i] === quote) {
          if (type !== T_STRING) return refuse(`a quoted value in a ${TYPE_NAMES[type]} column`, i);
          let p = i + 1;
          for (;;) {
            while (p < n && quotedStops[b[p]] === 0) p++;
            if (p >= n) return prefix ? incomplete() : refuse('an unterminated quoted field', start);
            c = b[p];
            if (c === quote) {
              if (p + 1 < n && b[p + 1] === quote) {
                if (esc >= 0) return refuse('a doubled quote where the escape is not the quote', p);
                p += 2;
                continue;
              }
              p++;
              break;
            }
            if (c === esc) {
              p += p + 1 < n && (b[p + 1] === quote || b[p + 1] === esc) ? 2 : 1;
              continue;
            }
            // A line break inside the quotes (\r\n is one line, as the cutter counts).
            if (c === CR || p === 0 || b[p - 1] !== CR) recBreaks++;
            p++;
            if (p + 1 < n && b[p] === BACKSLASH && b[p + 1] === DOT)
              return refuse('a line starting with \\.', p);
          }
          i = p;
          if (i - start - 2 > maxField) return refuse('a field longer than the limit', start);
          if (i >= n && prefix) return incomplete();
          if (i < n) {
            c = b[i];
            if (c !== delim && c !== LF && c !== CR) return refuse('text after a closing quote', i);
          }
        } else if (type === T_STRING) {
          let p = i;
          while (p < n && sStops[b[p]] === 0) p++;
          if (p >= n && prefix) return incomplete();
          if (p < n && b[p] === quote) return refuse('a quote inside an unquoted field', p);
          if (p - start > maxField) return refuse('a field longer than the limit', start);
          if (ncols === 1 && onlyBlanks(b, start, p)) return refuse('a line of spaces and tabs', start);
          i = p;
        } else {
          let p = i;
          while (p < n && tStops[b[p]] === 0) p++;
          // The value may go on in the next buffer: checked once it is whole.
          if (p >= n && prefix) return incomplete();
          if (p < n && b[p] === quote) return refuse('a quote inside an unquoted field', p);
          // Empty (p === i): NULL to both.
          const ok =
            p === i ||
            (p - i <= MAX_TYPED &&
              (type === T_DECIMAL
                ? decimal(b, i, p, decimalLimits[col].before, decimalLimits[col].after)
                : typedValue(type, b, i, p)));
          if (!ok) {
            return refuse(`not a plain ${TYPE_NAMES[type]} value`, i);
          }
          i = p;
        }
        col++;
        if (i < n && b[i] === delim) {
          if (col === ncols) return refuse('more fields than columns', i);
          i++;
          if (i >= n && prefix) return incomplete();
          continue;
        }
        if (col !== ncols) return refuse('fewer fields than columns', recStart);
        break;
      }
      if (prefix && (i >= n || (b[i] === CR && i + 1 >= n))) return incomplete();
      records++;
      if (i >= n) break;
      let t: number;
      if (b[i] === LF) {
        t = EOL_LF;
        i++;
      } else if (i + 1 < n && b[i + 1] === LF) {
        t = EOL_CRLF;
        i += 2;
      } else {
        t = EOL_CR;
        i++;
      }
      if (t !== eol) {
        if (eol !== 0) return refuse('mixed line endings', i - 1);
        eol = t;
      }
      end = i;
      breaks += recBreaks;
    }
    if (prefix) return incomplete();
    // Nothing to load: the reference alone decides what an empty file is.
    if (records === 0) return refuse('no records', 0);
    return { clean: true, records, eol: EOL_NAMES[eol], end: n, lines: records + breaks };
  };
}

/** How many bytes at the end of `b` start a UTF-8 character that they do not finish. */
function truncatedUtf8(b: Buffer): number {
  const n = b.length;
  for (let k = 1; k <= 3 && k <= n; k++) {
    const c = b[n - k];
    if ((c & 0xc0) === 0x80) continue;
    const length = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    return length > k ? k : 0;
  }
  return 0;
}

function onlyBlanks(b: Buffer, s: number, e: number): boolean {
  for (let k = s; k < e; k++) {
    const c = b[k];
    if (c !== SPACE && c !== TAB) return false;
  }
  return true;
}

function typedValue(type: number, b: Buffer, s: number, e: number): boolean {
  switch (type) {
    case T_INT:
      return integer(b, s, e, INT4_POS, INT4_NEG);
    case T_BIGINT:
      return integer(b, s, e, INT8_POS, INT8_NEG);
    case T_FLOAT:
      return float(b, s, e, 37);
    case T_DOUBLE:
      return float(b, s, e, 307);
    case T_BOOLEAN:
      return boolean(b, s, e);
    case T_DATE:
      return e - s === 10 && date(b, s);
    case T_TIMESTAMP:
      return timestamp(b, s, e);
    default:
      return false;
  }
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

function integer(b: Buffer, s: number, e: number, maxPos: Buffer, maxNeg: Buffer): boolean {
  let p = s;
  let neg = false;
  if (b[p] === MINUS) {
    neg = true;
    p++;
  } else if (b[p] === PLUS) p++;
  if (p === e) return false;
  for (let k = p; k < e; k++) if (!isDigit(b[k])) return false;
  while (p < e - 1 && b[p] === ZERO) p++;
  const limit = neg ? maxNeg : maxPos;
  const len = e - p;
  if (len !== limit.length) return len < limit.length;
  for (let k = 0; k < len; k++) {
    const d = b[p + k] - limit[k];
    if (d !== 0) return d < 0;
  }
  return true;
}

/** The float grammar, and a decimal magnitude within ±`maxMagnitude` (or zero). */
function float(b: Buffer, s: number, e: number, maxMagnitude: number): boolean {
  let p = s;
  if (b[p] === PLUS || b[p] === MINUS) p++;
  const intStart = p;
  while (p < e && isDigit(b[p])) p++;
  const intEnd = p;
  let fracStart = p;
  let fracEnd = p;
  if (p < e && b[p] === DOT) {
    fracStart = ++p;
    while (p < e && isDigit(b[p])) p++;
    fracEnd = p;
  }
  if (intEnd === intStart && fracEnd === fracStart) return false;
  let exp = 0;
  if (p < e && (b[p] | 0x20) === 0x65) {
    p++;
    let expNeg = false;
    if (p < e && (b[p] === PLUS || b[p] === MINUS)) expNeg = b[p++] === MINUS;
    const expStart = p;
    while (p < e && isDigit(b[p])) exp = exp * 10 + b[p++] - ZERO;
    if (p === expStart || p - expStart > 4) return false;
    if (expNeg) exp = -exp;
  }
  if (p !== e) return false;
  // The position of the first non-zero digit gives the magnitude.
  for (let k = intStart; k < intEnd; k++) {
    if (b[k] !== ZERO) return within(intEnd - k - 1 + exp, maxMagnitude);
  }
  for (let k = fracStart; k < fracEnd; k++) {
    if (b[k] !== ZERO) return within(exp - (k - fracStart + 1), maxMagnitude);
  }
  return true;
}

/** The decimal grammar, within `before` integer digits (leading zeros aside) and `after` fraction digits. */
function decimal(b: Buffer, s: number, e: number, before: number, after: number): boolean {
  let p = s;
  if (b[p] === PLUS || b[p] === MINUS) p++;
  while (p < e && b[p] === ZERO) p++;
  const intStart = p;
  while (p < e && isDigit(b[p])) p++;
  const intDigits = p - intStart;
  const anyInt = p > s && isDigit(b[p - 1]);
  let fracDigits = 0;
  if (p < e && b[p] === DOT) {
    const fracStart = ++p;
    while (p < e && isDigit(b[p])) p++;
    fracDigits = p - fracStart;
  }
  return p === e && (anyInt || fracDigits > 0) && intDigits <= before && fracDigits <= after;
}

// Not Math.abs: a global lookup per value is slow inside a vm context (as under Jest).
function within(m: number, max: number): boolean {
  return m <= max && m >= -max;
}

function boolean(b: Buffer, s: number, e: number): boolean {
  // `| 0x20` lower-cases an ASCII letter; for the letters compared here no other byte maps to them.
  switch (e - s) {
    case 1:
      return BOOL1[b[s]] === 1;
    case 2:
      return (b[s] | 0x20) === 0x6e && (b[s + 1] | 0x20) === 0x6f; // no
    case 3:
      return (b[s] | 0x20) === 0x79 && (b[s + 1] | 0x20) === 0x65 && (b[s + 2] | 0x20) === 0x73; // yes
    case 4:
      return (
        (b[s] | 0x20) === 0x74 &&
        (b[s + 1] | 0x20) === 0x72 &&
        (b[s + 2] | 0x20) === 0x75 &&
        (b[s + 3] | 0x20) === 0x65
      ); // true
    case 5:
      return (
        (b[s] | 0x20) === 0x66 &&
        (b[s + 1] | 0x20) === 0x61 &&
        (b[s + 2] | 0x20) === 0x6c &&
        (b[s + 3] | 0x20) === 0x73 &&
        (b[s + 4] | 0x20) === 0x65
      ); // false
    default:
      return false;
  }
}

/** Two ASCII digits at `p` as a number, or -1. */
function digits2(b: Buffer, p: number): number {
  const x = b[p] - ZERO;
  const y = b[p + 1] - ZERO;
  return x >= 0 && x <= 9 && y >= 0 && y <= 9 ? x * 10 + y : -1;
}

/** `YYYY-MM-DD` at `s` (10 bytes, the caller checked they exist), a real date in 0001-9999. */
function date(b: Buffer, s: number): boolean {
  if (b[s + 4] !== MINUS || b[s + 7] !== MINUS) return false;
  const hi = digits2(b, s);
  const lo = digits2(b, s + 2);
  const month = digits2(b, s + 5);
  const day = digits2(b, s + 8);
  if (hi < 0 || lo < 0 || month < 1 || month > 12 || day < 1) return false;
  const year = hi * 100 + lo;
  if (year === 0) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return day <= (month === 2 && leap ? 29 : DAYS_IN_MONTH[month]);
}

function timestamp(b: Buffer, s: number, e: number): boolean {
  if (e - s < 10 || !date(b, s)) return false;
  if (e - s === 10) return true;
  let p = s + 10;
  const sep = b[p];
  if ((sep !== 0x54 && sep !== 0x74 && sep !== SPACE) || p + 6 > e || b[p + 3] !== COLON) return false;
  const hour = digits2(b, p + 1);
  const minute = digits2(b, p + 4);
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59) return false;
  p += 6;
  if (p < e && b[p] === COLON) {
    if (p + 3 > e) return false;
    const second = digits2(b, p + 1);
    if (second < 0 || second > 59) return false;
    p += 3;
    if (p < e && b[p] === DOT) {
      const start = ++p;
      while (p < e && isDigit(b[p])) p++;
      if (p === start || p - start > 9) return false;
    }
  }
  if (p < e) {
    const z = b[p];
    if (z === 0x5a || z === 0x7a) p++;
    else if (z === PLUS || z === MINUS) {
      if (p + 3 > e) return false;
      const zh = digits2(b, p + 1);
      if (zh < 0 || zh > 14) return false;
      p += 3;
      if (p < e) {
        if (b[p] === COLON) p++;
        if (p + 2 !== e) return false;
        const zm = digits2(b, p);
        if (zm < 0 || zm > 59) return false;
        p += 2;
      }
    } else return false;
  }
  return p === e;
}
