/**
 * Streaming CSV reader: RFC 4180 plus a configurable delimiter, quote and escape, and \n, \r\n
 * and \r line endings. Memory is bounded by the batch size (rows and bytes) and the record limit,
 * never by the file size.
 *
 * How it is fast: each input chunk (64 KiB..1 MiB) is validated once natively (isAscii/isUtf8,
 * see ChunkDecoder) and decoded once as latin1; the tokenizer walks the chunk's bytes with the
 * shared CSV grammar (csv-grammar.ts: one transition table, also run by the fast path's cutter;
 * table-driven inner loops skip the plain bytes) and cuts each ASCII field out of that text with one
 * `substring`; only a field with multi-byte characters is decoded on its own as UTF-8. Fields
 * that straddle a chunk boundary or hold an escaped quote are assembled from parts. NUL bytes
 * and invalid UTF-8 are found with one native search per chunk, then attributed to fields by
 * position (one comparison per field).
 *
 * Choices (documented):
 * - text after a closing quote joins the field (`"ab"cd` is `abcd`), and a quote character inside
 *   an unquoted field is literal (`5" screen`), as Python's csv module reads them;
 * - with an escape other than the quote (e.g. `\`), the escape only escapes the quote or itself
 *   (`\"` is `"`, `\\` is `\`, `\n` stays two characters), and a doubled quote still means one
 *   literal quote;
 * - lines holding nothing but spaces and tabs count as blank and are skipped;
 * - an unquoted field whose text is one of `nullValues` (default: the empty field) is null; a
 *   quoted field never is (`""` is the empty string), as PostgreSQL's CSV import reads them;
 * - a UTF-8 BOM is dropped in `utf-8` mode only; delimiter, quote and escape must be single ASCII
 *   characters (latin1 characters in `latin1` mode);
 * - a row has at most one error: the first problem found (an unterminated quote wins, being the
 *   cause of everything after it); invalid UTF-8 offsets are file byte offsets;
 * - cells are substrings of their chunk's text: a batch keeps its chunks' text alive until it is
 *   released (header names and RowError.raw are copied).
 */
import type { CsvAttributes } from '@tapyard/model';
import { ByteInput, ChunkDecoder, DecodedChunk, DEFAULT_MIN_CHUNK, rechunk } from './chunks';
import { RAW_BYTES, RAW_LIMIT, positiveOption } from './batch-sink';
import { RecordBatch } from './record-batch';
import { CsvRecordBuilder, EMPTY_CHUNK, NONE } from './csv-fields';
import * as grammar from './csv-grammar';

export { DEFAULT_NULL_VALUES } from './csv-fields';

// Module-local copies: a hot loop then reads constants, not properties of the module object.
const {
  QUOTE_MARK,
  CLOSED_FIELD,
  AT_MARK,
  CR,
  END_FIELD,
  END_RECORD,
  EOF_RECORD,
  EOF_UNTERMINATED,
  ESC_SEEN,
  FIELD_START,
  LINE,
  MARK,
  NEXT_FIELD,
  QUOTED,
  QUOTE_SEEN,
  REC_START,
  SPLIT,
  STATE_MASK,
  TAKE,
  UNQUOTED,
  atEnd,
  newLine,
} = grammar;

export interface CsvReadOptions extends CsvAttributes {
  header: boolean;
  /** Records (rows plus row errors) per yielded batch; default 5,000. */
  batchRows?: number;
  /** Records (rows plus row errors) are also cut into a batch once they hold this many bytes; default 32 MiB. */
  batchBytes?: number;
  /** Longest field; default 16 MiB. A longer field makes its row an error. */
  maxFieldBytes?: number;
  /** Most bytes of a record's fields together; default 16 MiB. A larger record is a row error. */
  maxRecordBytes?: number;
  /** Most fields in the header or the first record; default 10,000 (more is fatal). */
  maxColumns?: number;
  /** Required number of fields per record; default the header's width, else the first record's. */
  expectedColumns?: number;
  /** Input chunks smaller than this are coalesced first; default 64 KiB (tests use 1). */
  minChunkBytes?: number;
}

// Scan-loop table entries (0: a plain byte).
const STOP = 1;
const HIGH = 2;

/** Reads CSV records from `input` and yields them in batches of up to `batchRows` records (fewer past `batchBytes`). */
export async function* readCsv(input: ByteInput, opts: CsvReadOptions): AsyncGenerator<RecordBatch> {
  const tokenizer = new CsvTokenizer(opts);
  const decoder = new ChunkDecoder(opts.encoding === 'latin1' ? 'latin1' : 'utf-8');
  const sink = tokenizer.sink;
  for await (const chunk of rechunk(
    input,
    positiveOption('minChunkBytes', opts.minChunkBytes, DEFAULT_MIN_CHUNK),
  )) {
    tokenizer.feed(decoder.decode(chunk));
    for (let b = sink.take(); b !== undefined; b = sink.take()) yield b;
  }
  const tail = decoder.end();
  if (tail.length > 0) tokenizer.feed(tail);
  tokenizer.finish();
  for (let b = sink.take(); b !== undefined; b = sink.take()) yield b;
}

class CsvTokenizer extends CsvRecordBuilder {
  private readonly unquotedStops: Uint8Array;
  private readonly quotedStops: Uint8Array;

  private state = REC_START;
  /** Whether the previous chunk ended with \r (for a \r\n split across chunks). */
  private prevCR = false;

  constructor(opts: CsvReadOptions) {
    super(opts);
    const grammar = this.grammar;
    // Scan-loop tables: STOP hands the byte to the grammar; HIGH is a byte of a UTF-8 multi-byte
    // character (in utf-8 mode the special characters are ASCII, so never both).
    this.unquotedStops = grammar.stops(UNQUOTED);
    this.quotedStops = grammar.stops(QUOTED);
    if (opts.encoding !== 'latin1') {
      for (const t of [this.unquotedStops, this.quotedStops]) {
        for (let c = 0x80; c < 0x100; c++) t[c] = HIGH;
      }
    }
  }

  feed(chunk: DecodedChunk): void {
    const s = chunk.bytes;
    const n = s.length;
    this.chunk = chunk;
    const nul = s.indexOf(0);
    this.nextNul = nul < 0 ? NONE : nul;
    this.badPos = chunk.badPos;
    this.badOffsets = chunk.badOffsets;
    this.badIdx = 0;
    this.nextBad = chunk.badPos.length > 0 ? chunk.badPos[0] : NONE;

    const step = this.grammar.step;
    const unquotedStops = this.unquotedStops;
    const quotedStops = this.quotedStops;
    let state = this.state;
    let i = 0;
    let segStart = 0;
    let recStart = 0;
    // Where the field's text may end (a closing quote or an escape): see MARK; -1 when that byte
    // was in an earlier chunk.
    let mark = -1;
    // Count of UTF-8 bytes >= 0x80 before position i, and before segStart: a field without any
    // is ASCII and is cut out of the chunk's latin1 text; one with some is decoded as UTF-8.
    let high = 0;
    let segHigh = 0;

    while (i < n) {
      if (state === FIELD_START) {
        // The field's first byte: quoted or not (folded in here, as it follows every delimiter).
        const f = step[(FIELD_START << 8) | s[i]];
        if ((f & TAKE) !== 0) i++;
        state = f & STATE_MASK;
        this.fieldQuoted = state === QUOTED;
        if (state === QUOTED) this.quoteLine = this.line;
        segStart = i;
        segHigh = high;
      }
      // Scan loop: skip the bytes the grammar only takes (the common case).
      if (state === UNQUOTED || state === QUOTED) {
        const stops = state === UNQUOTED ? unquotedStops : quotedStops;
        while (i < n) {
          const stop = stops[s[i]];
          if (stop !== 0) {
            if (stop === STOP) break;
            high++;
          }
          i++;
        }
        if (i === n) break;
      }
      // Every other byte: the grammar's transition.
      let c = s[i];
      let t = step[(state << 8) | c];
      if (t === QUOTE_MARK) {
        mark = i++;
        state = QUOTE_SEEN;
        if (i === n) break;
        // The byte after the quote decides at once (most often a delimiter: the field is closed).
        c = s[i];
        t = step[(QUOTE_SEEN << 8) | c];
      }
      if (t === NEXT_FIELD || t === CLOSED_FIELD) {
        this.endField(segStart, t === NEXT_FIELD ? i : mark, segHigh, high);
        i++;
        state = FIELD_START;
        continue;
      }
      const next = t & STATE_MASK;
      if (t >= END_FIELD) {
        if ((t & END_FIELD) !== 0) this.endField(segStart, (t & AT_MARK) !== 0 ? mark : i, segHigh, high);
        if ((t & END_RECORD) !== 0) this.endRecord(recStart, i);
        if ((t & MARK) !== 0) mark = i;
        if ((t & SPLIT) !== 0) {
          if (mark >= 0) this.pushPart(segStart, mark, segHigh, high);
          else if (state === ESC_SEEN) this.dropLastChar();
          else this.carrying = true;
          segStart = i;
          segHigh = high;
        }
      }
      if ((t & LINE) !== 0 && newLine(c, i > 0 ? s[i - 1] === CR : this.prevCR)) this.line++;
      if ((t & TAKE) !== 0) i++;
      if (state === REC_START && next === FIELD_START) {
        this.recLine = this.line;
        recStart = i;
        this.rawHead = '';
      }
      state = next;
    }

    // End of the chunk: keep the field in progress, attribute leftover NUL/invalid UTF-8 to it.
    if (state === UNQUOTED || state === QUOTED || state === ESC_SEEN) {
      this.pushPart(segStart, n, segHigh, high);
    } else if (state === QUOTE_SEEN) {
      this.pushPart(segStart, mark, segHigh, high);
    }
    if (state !== REC_START) {
      if (this.nextNul < n || this.nextBad < n) this.markBytes(this.fieldCount, n);
      if (this.rawHead.length < RAW_LIMIT)
        this.rawHead += chunk.slice(recStart, Math.min(n, recStart + RAW_BYTES));
    }
    if (n > 0) this.prevCR = s[n - 1] === CR;
    this.state = state;
  }

  finish(): void {
    this.chunk = EMPTY_CHUNK;
    this.nextNul = NONE;
    this.nextBad = NONE;
    switch (atEnd(this.state)) {
      case EOF_RECORD:
        // A delimiter at the very end: the last field is empty and unquoted.
        if (this.state === FIELD_START) this.fieldQuoted = false;
        this.endField(0, 0, 0, 0);
        this.endRecord(0, 0);
        break;
      case EOF_UNTERMINATED:
        this.endUnterminated();
        break;
    }
    this.state = REC_START;
    this.endInput();
  }
}
