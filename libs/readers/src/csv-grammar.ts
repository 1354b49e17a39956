/**
 * The CSV grammar, once: which special characters are allowed, the tokenizer's states and, for
 * every state and byte, what happens next. The reference reader (csv-reader.ts) and the fast
 * path's record cutter (fastpath/csv-rows.ts) both run this table, so a rule (a quote opens a
 * field only at its start, text after a closing quote joins the field, an escape only escapes the
 * quote or itself, \n, \r\n and a lone \r end a record outside quotes, which lines are blank,
 * which line breaks count) can no longer differ between them. What each does with a transition
 * differs: the reader cuts fields out, the cutter only follows records.
 *
 * Both keep scan loops for speed (the reader's byte tables, the cutter's native searches); those
 * loops only skip bytes for which the table says "take it, stay in this state" (see `plain`),
 * and every other byte goes through `step`.
 */
import { csvChars } from './csv-chars';

export const LF = 10;
export const CR = 13;
export const SPACE = 32;
export const TAB = 9;

// Tokenizer states.
export const REC_START = 0; // between records, at a line break or a line start
export const FIELD_START = 1; // at the first byte of a field
export const UNQUOTED = 2;
export const QUOTED = 3;
export const QUOTE_SEEN = 4; // after a quote inside a quoted field: closing, or the first of a doubled quote
export const ESC_SEEN = 5; // after an escape (other than the quote) inside a quoted field
const STATES = 6;

/** `step` entries: the next state in the low bits, then what the transition does. */
export const STATE_MASK = 7;
/** The byte is consumed (else the next state reads the same byte). */
export const TAKE = 8;
/** A line break: it counts as a physical line when `newLine` says so. */
export const LINE = 16;
/** The field ends: at the byte, or at the mark with AT_MARK. */
export const END_FIELD = 32;
/** The record ends at the byte (its line break, not taken). */
export const END_RECORD = 64;
/** The byte is a closing-quote candidate or an escape: remember where (the field's text may end there). */
export const MARK = 128;
/** The field's text so far ends at the mark, and goes on from the byte (doubled quote, escaped character, text after a closing quote). */
export const SPLIT = 256;
/** END_FIELD at the mark (the closing quote) instead of at the byte. */
export const AT_MARK = 512;

/** The commonest transitions, which scan loops may test for first: a delimiter after an unquoted field, */
export const NEXT_FIELD = FIELD_START | TAKE | END_FIELD;
/** a quote in a quoted field, */
export const QUOTE_MARK = QUOTE_SEEN | TAKE | MARK;
/** and a delimiter after the closing quote. */
export const CLOSED_FIELD = FIELD_START | TAKE | END_FIELD | AT_MARK;

/** What the end of the input does in each state. */
export const EOF_RECORD = 1; // the last field and record end there
export const EOF_UNTERMINATED = 2; // inside quotes: the record is an unterminated quoted field

/** Whether a line break byte starts a new physical line: \r always, \n unless it ends \r\n. */
export function newLine(c: number, afterCR: boolean): boolean {
  return c === CR || (c === LF && !afterCR);
}

/** What the end of the input means in `state` (EOF_RECORD, EOF_UNTERMINATED, or 0: nothing open). */
export function atEnd(state: number): number {
  switch (state) {
    case FIELD_START: // a delimiter last: the last field is empty
    case UNQUOTED:
    case QUOTE_SEEN:
      return EOF_RECORD;
    case QUOTED:
    case ESC_SEEN:
      return EOF_UNTERMINATED;
    default:
      return 0;
  }
}

export class CsvGrammar {
  readonly delim: number;
  readonly quote: number;
  readonly esc: number;
  /** `step[state << 8 | byte]`: the next state | flags. */
  readonly step: Uint16Array;
  /**
   * Bytes that make a line blank when it holds nothing else (spaces and tabs other than the
   * delimiter): such a line is one unquoted field of them, and is no record. At the line start a
   * quote still opens a quoted field, so a line that begins with the quote is never blank.
   */
  readonly blank: Uint8Array;

  constructor(opts: Parameters<typeof csvChars>[0]) {
    const { delim, quote, esc } = csvChars(opts);
    this.delim = delim;
    this.quote = quote;
    this.esc = esc;
    this.blank = new Uint8Array(256);
    for (const c of [SPACE, TAB]) if (c !== delim) this.blank[c] = 1;
    const step = new Uint16Array(STATES << 8);
    for (let c = 0; c < 256; c++) {
      const br = c === LF || c === CR;
      step[(REC_START << 8) | c] = br ? REC_START | TAKE | LINE : FIELD_START;
      step[(FIELD_START << 8) | c] = c === quote ? QUOTED | TAKE : UNQUOTED;
      step[(UNQUOTED << 8) | c] =
        c === delim
          ? FIELD_START | TAKE | END_FIELD
          : br
            ? REC_START | END_FIELD | END_RECORD
            : UNQUOTED | TAKE;
      step[(QUOTED << 8) | c] =
        c === quote
          ? QUOTE_SEEN | TAKE | MARK
          : c === esc
            ? ESC_SEEN | TAKE | MARK
            : br
              ? QUOTED | TAKE | LINE
              : QUOTED | TAKE;
      step[(QUOTE_SEEN << 8) | c] =
        c === quote
          ? QUOTED | TAKE | SPLIT // a doubled quote: one literal quote
          : c === delim
            ? FIELD_START | TAKE | END_FIELD | AT_MARK
            : br
              ? REC_START | END_FIELD | AT_MARK | END_RECORD
              : UNQUOTED | SPLIT; // text after the closing quote joins the field
      step[(ESC_SEEN << 8) | c] = c === quote || c === esc ? QUOTED | TAKE | SPLIT : QUOTED;
    }
    this.step = step;
  }

  /**
   * For a scan loop in `state`: 1 for each byte that the loop must hand to `step`, 0 for the
   * bytes it may skip (taken, same state, nothing else).
   */
  stops(state: number): Uint8Array {
    const out = new Uint8Array(256);
    for (let c = 0; c < 256; c++) out[c] = this.step[(state << 8) | c] === (state | TAKE) ? 0 : 1;
    return out;
  }
}
