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
 * - a field longer than the reference's limit (`maxFieldBytes`, default 16 MiB), or a record (its
 *   bytes, delimiters and quotes included: at least what the reference counts) longer than its
 *   record limit (`maxRecordBytes`, default 16 MiB);
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
 * - a record with a cell that fails the pipeline's data-quality rules (`cellRules`, given as the
 *   reference reader's cell): the reference path rejects it, with its reason and line.
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
import { CsvCell, CsvCellRule, unescapedCell } from './csv-cell';
import { TYPE_CODES, decimal, typedValue } from './csv-values';

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
  /** The reference's record limit; default 16 MiB. */
  maxRecordBytes?: number;
  /**
   * Per file column, the pipeline's data-quality rules there (absent or null: none). A record with a
   * cell that fails them is refused, so that the validating path rejects it with its reason.
   */
  cellRules?: readonly (CsvCellRule | null)[];
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

// The type codes the value checks (csv-values.ts) switch on, bound here once: read per field.
const T_STRING = TYPE_CODES.string;
const T_DECIMAL = TYPE_CODES.decimal;
/** The type names by code, for the refusal messages. */
const TYPE_NAMES = (Object.keys(TYPE_CODES) as FieldType[]).sort((a, b) => TYPE_CODES[a] - TYPE_CODES[b]);

const EOL_LF = 1;
const EOL_CRLF = 2;
const EOL_CR = 3;
const EOL_NAMES: (CsvLineEnding | null)[] = [null, 'lf', 'crlf', 'cr'];

/** Longest value accepted in a column that is not a string (real values are far shorter). */
const MAX_TYPED = 64;

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
  const maxRecord = positiveOption('maxRecordBytes', opts.maxRecordBytes, DEFAULT_MAX_BYTES);
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
  const cellRules = opts.types.map((_, k) => opts.cellRules?.[k] ?? null);
  const ruled = cellRules.some((r) => r !== null);
  const cell = new CsvCell();
  /** Whether the cell [s, e) of the buffer being checked (`isNull`: NULL) passes `rule`. */
  const passes = (rule: CsvCellRule, s: number, e: number, isNull: boolean): boolean =>
    isNull ? rule.nullPasses : rule.passes(cell.at(s, e));

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
    const ascii = isAscii(whole);
    if (!ascii && !isUtf8(whole)) return refuse('invalid UTF-8', 0);
    // The rules' cells: valid UTF-8, as a field never ends inside a character (the special
    // characters are ASCII).
    if (ruled) cell.reset(b, ascii);

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
          let escaped = false;
          for (;;) {
            while (p < n && quotedStops[b[p]] === 0) p++;
            if (p >= n) return prefix ? incomplete() : refuse('an unterminated quoted field', start);
            c = b[p];
            if (c === quote) {
              if (p + 1 < n && b[p + 1] === quote) {
                if (esc >= 0) return refuse('a doubled quote where the escape is not the quote', p);
                p += 2;
                escaped = true;
                continue;
              }
              p++;
              break;
            }
            if (c === esc) {
              if (p + 1 < n && (b[p + 1] === quote || b[p + 1] === esc)) {
                p += 2;
                escaped = true;
              } else p++;
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
          const rule = ruled ? cellRules[col] : null;
          if (rule !== null) {
            const ok = escaped
              ? rule.passes(unescapedCell(b, start + 1, i - 1, quote, esc))
              : passes(rule, start + 1, i - 1, false);
            if (!ok) return refuse('a value that fails a data-quality rule', start);
          }
        } else if (type === T_STRING) {
          let p = i;
          while (p < n && sStops[b[p]] === 0) p++;
          if (p >= n && prefix) return incomplete();
          if (p < n && b[p] === quote) return refuse('a quote inside an unquoted field', p);
          if (p - start > maxField) return refuse('a field longer than the limit', start);
          if (ncols === 1 && onlyBlanks(b, start, p)) return refuse('a line of spaces and tabs', start);
          const rule = ruled ? cellRules[col] : null;
          // An unquoted empty field is NULL (the default null handling: see fastPathBlocker).
          if (rule !== null && !passes(rule, start, p, p === start))
            return refuse('a value that fails a data-quality rule', start);
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
          const rule = ruled ? cellRules[col] : null;
          // The value's grammar is ASCII; the reference's typed value is NULL exactly when the cell is.
          if (rule !== null && !passes(rule, i, p, p === i))
            return refuse('a value that fails a data-quality rule', i);
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
      if (i - recStart > maxRecord) return refuse('a record longer than the limit', recStart);
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
