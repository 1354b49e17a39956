/**
 * Row-aligned chunking of CSV bytes, for the COPY fast path: the input is cut into chunks of about
 * `targetBytes` that hold whole records only, without parsing a single field. A chunk can then go
 * to PostgreSQL as it is (`COPY … (FORMAT csv)`) when csv-check says it is clean, or to the
 * reference reader (readCsv + RowPlan) when it is not; both see exactly the records the reference
 * reader would see in the whole file.
 *
 * Record boundaries are the reference reader's (readers/csv-reader.ts), not PostgreSQL's: both run
 * one grammar (readers/csv-grammar.ts), whose rules are: a quote
 * opens a quoted field only at the start of a field, text after a closing quote is unquoted (a
 * quote there is literal), an escape other than the quote only escapes the quote or itself, and
 * `\n`, `\r\n` and a lone `\r` end a record outside quotes. Where PostgreSQL would cut records
 * differently the chunk is not clean anyway (csv-check refuses it), so the two never disagree on
 * a chunk that takes the fast path.
 *
 * Output, in order:
 * - with `header: true`, one `{ kind: 'header' }` part: the bytes from the start of the file (BOM
 *   dropped) through the header record and its line break (blank lines before it included). Read
 *   it with readCsv (`header: true`) to get the names; on an empty file it holds what there is
 *   (maybe nothing), and readCsv then reports the file as empty, as it would for the whole file;
 * - then `{ kind: 'chunk' }` parts. Concatenated, header and chunks are the input minus a leading
 *   UTF-8 BOM (utf-8 mode).
 *
 * Cuts are made only at the start of a line between records (after a complete line break, never
 * between `\r` and `\n`), once the chunk has reached `targetBytes`. So a chunk may begin with blank
 * lines (they belong to no record; `firstLine` is then later than `startLine`), and a run of blank
 * lines alone can make a chunk with no record.
 *
 * A chunk that lies within one input buffer is a view of it (no copy): the input's buffers must
 * not be reused by their producer (Node streams do not reuse them).
 *
 * Memory: at most one chunk in progress plus the input buffer being scanned. A record that grows
 * past `maxRecordBytes` (default 16 MiB, the reference's field limit) is not held whole: the
 * records before it are emitted as a normal chunk, then the long record is emitted in pieces as
 * it arrives (one per input buffer). Those pieces form a run: the first has `open: true`, the next
 * ones `continues: true` (and `open: true` until the last), and the last piece (`continues: true,
 * open: false`) ends at the line start after the record. A run is never clean: feed all its
 * pieces, in order, as one stream to the reference reader. A header longer than the limit is a
 * FatalReadError (the caller can load the file with the reference path instead).
 *
 * Reading a chunk (or a run) with the reference reader gives exactly the records the whole-file
 * read gives for those lines when it is read with `header: false`, the file's `expectedColumns`,
 * and `readerInput(bytes)` (a BOM is put in front, because readCsv drops a BOM at the start of its
 * input and a chunk may begin with U+FEFF that is data); its line numbers are then relative to
 * the chunk: add `startLine - 1`.
 */
import type { CsvAttributes } from '@tapyard/model';
import { CsvGrammar } from '../csv-grammar';
import * as grammar from '../csv-grammar';
import { ChunkAssembly, CsvRowsPart, UTF8_BOM } from './row-chunks';

export type { CsvChunk, CsvHeaderPart, CsvRowsPart } from './row-chunks';
export { DEFAULT_TARGET_BYTES, readerInput } from './row-chunks';

// Module-local copies: a hot loop then reads constants, not properties of the module object.
const { CR, FIELD_START, LF, LINE, QUOTED, REC_START, SPACE, STATE_MASK, TAB, TAKE, UNQUOTED, newLine } =
  grammar;

export interface CsvRowsOptions extends Pick<CsvAttributes, 'delimiter' | 'quote' | 'escape' | 'header'> {
  encoding?: CsvAttributes['encoding'];
  /** Size at which a chunk is cut (at the next line start); default 1 MiB. */
  targetBytes?: number;
  /** A record longer than this is emitted in pieces (see the module comment); default 16 MiB. */
  maxRecordBytes?: number;
}

/** Only spaces and tabs since the line start: a blank line or a record (the cutter's own state). */
const BLANK = 7;

/** Yields the header part (when `header`) and then row-aligned chunks of `input`. */
export async function* csvRows(
  input: AsyncIterable<Buffer | Uint8Array | string>,
  opts: CsvRowsOptions,
): AsyncGenerator<CsvRowsPart> {
  const chunker = new RowChunker(opts);
  const out: CsvRowsPart[] = [];
  for await (const raw of input) {
    const buf =
      typeof raw === 'string'
        ? Buffer.from(raw, 'utf8')
        : Buffer.isBuffer(raw)
          ? raw
          : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
    if (buf.length === 0) continue;
    chunker.push(buf, out);
    // Handed out per input buffer: at most one buffer's worth of parts is ever queued.
    for (const part of out) yield part;
    out.length = 0;
  }
  chunker.finish(out);
  for (const part of out) yield part;
}

/** Position of `byte` in `b` at or after `from`, or `b.length` (never stale once past the end). */
function find(b: Buffer, byte: number, from: number): number {
  const j = b.indexOf(byte, from);
  return j < 0 ? b.length : j;
}

class RowChunker extends ChunkAssembly {
  private readonly grammar: CsvGrammar;
  private readonly utf8: boolean;

  // Scanner state carried from one input buffer to the next.
  private state = REC_START;
  /** The last byte of the previous buffer was `\r` (a `\n` first in this one pairs with it). */
  private lastCR = false;
  /** The scan position follows a complete line break (or the start): a chunk may be cut here. */
  private lineStart = true;
  /** utf-8: the first bytes, held until it is known whether they are a BOM. */
  private bomProbe: Buffer | null;

  constructor(opts: CsvRowsOptions) {
    super(opts);
    this.grammar = new CsvGrammar(opts);
    this.utf8 = opts.encoding !== 'latin1';
    this.bomProbe = this.utf8 ? Buffer.alloc(0) : null;
  }

  push(input: Buffer, out: CsvRowsPart[]): void {
    let b = input;
    if (this.bomProbe !== null) {
      const head = this.bomProbe.length === 0 ? b : Buffer.concat([this.bomProbe, b]);
      if (head.length < 3 && UTF8_BOM.subarray(0, head.length).equals(head)) {
        // Maybe a BOM still arriving: wait for more bytes.
        this.bomProbe = Buffer.from(head);
        return;
      }
      this.bomProbe = null;
      b = head;
      if (b.length >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) {
        b = b.subarray(3);
        this.fileOffset = 3;
        this.chunkOffset = 3;
        if (b.length === 0) return;
      }
    }
    this.scan(b, out);
  }

  finish(out: CsvRowsPart[]): void {
    if (this.bomProbe !== null && this.bomProbe.length > 0) {
      const probe = this.bomProbe;
      this.bomProbe = null;
      this.scan(probe, out);
    }
    if (this.headerPending) {
      out.push({ kind: 'header', bytes: this.take(this.piecesLen), offset: this.chunkOffset });
      this.headerPending = false;
      return;
    }
    // A run always ends with a piece that is not open, even an empty one.
    if (this.piecesLen > 0 || this.oversized) this.emitChunk(out, this.piecesLen, false);
  }

  /**
   * Scans one buffer: the hot loop. The grammar's table decides every transition; native searches
   * (Buffer.indexOf) only skip, in the fast lanes, bytes that the table would take without a
   * change of state.
   */
  private scan(b: Buffer, out: CsvRowsPart[]): void {
    const n = b.length;
    const g = this.grammar;
    const step = g.step;
    const blank = g.blank;
    const delim = g.delim;
    const quote = g.quote;
    const esc = g.esc;
    const base = this.fileOffset;
    let state = this.state;
    let line = this.line;
    let lineStart = this.lineStart;
    let i = 0;
    // Start of the bytes of `b` not yet in `pieces`.
    let seg = 0;
    // Cached next positions (b.length: none); refreshed when the scan has passed them.
    let nextLF = -1;
    let nextCR = -1;
    let nextQ = quote < 0 ? n : -1;
    let nextE = esc < 0 ? n : -1;

    while (i < n) {
      switch (state) {
        case REC_START: {
          if (lineStart && !this.headerPending && !this.oversized) {
            // Fast lane for the common case, a record that is one line without quotes: one
            // native search per line (two with \r\n), no state changes. Anything else (blank
            // lines, quotes, lone \r, a record going on in the next buffer) takes the general code.
            if (nextQ < i) nextQ = find(b, quote, i);
            if (nextCR < i) nextCR = find(b, CR, i);
            const target = this.target;
            for (;;) {
              const c = b[i];
              if (c === LF || c === CR || c === SPACE || c === TAB) break;
              if (nextLF < i) nextLF = find(b, LF, i);
              const j = nextLF;
              if (j === n || nextQ < j) break;
              if (nextCR < j) {
                if (nextCR !== j - 1) break;
                nextCR = find(b, CR, j + 1);
              }
              if (this.piecesLen + i - seg >= target) {
                this.pieces.push(b.subarray(seg, i));
                this.piecesLen += i - seg;
                seg = i;
                this.line = line;
                this.cut(out);
              }
              if (this.chunkRecords++ === 0) this.chunkFirstLine = line;
              line++;
              i = j + 1;
              if (i === n) break;
            }
            if (i === n) continue;
          }
          const c = b[i];
          const afterCR = i > 0 ? b[i - 1] === CR : this.lastCR;
          if (lineStart && !(c === LF && afterCR) && this.wantsCut(this.piecesLen + i - seg)) {
            this.pieces.push(b.subarray(seg, i));
            this.piecesLen += i - seg;
            seg = i;
            this.line = line;
            this.cut(out);
          }
          if (blank[c] !== 0 && c !== quote) {
            // Maybe a blank line (no record): decided at its first other byte.
            lineStart = false;
            this.blankOffset = base + i;
            state = BLANK;
            i++;
            continue;
          }
          const t = step[(REC_START << 8) | c];
          if ((t & TAKE) !== 0) {
            // A line break between records.
            if ((t & LINE) !== 0 && newLine(c, afterCR)) line++;
            lineStart = true;
            i++;
            continue;
          }
          lineStart = false;
          this.startRecord(base + i, line);
          state = t & STATE_MASK;
          continue;
        }
        case BLANK: {
          while (blank[b[i]] !== 0) if (++i === n) break;
          if (i === n) continue;
          const c = b[i];
          if (c === LF || c === CR) {
            // A blank line: not a record; REC_START takes its line break.
            state = REC_START;
            continue;
          }
          // A record after all, whose first field began unquoted at the line start (the grammar's
          // FIELD_START reads a blank byte as unquoted text).
          this.startRecord(this.blankOffset, line);
          state = UNQUOTED;
          continue;
        }
        case FIELD_START: {
          // The field's first byte: quoted or not (folded in here, as it follows every delimiter).
          const f = step[(FIELD_START << 8) | b[i]];
          if ((f & TAKE) !== 0) i++;
          state = f & STATE_MASK;
          continue;
        }
        case UNQUOTED: {
          // Skip to the record's line break, or to a quote that opens a field (one right after a
          // delimiter; a quote at `i` itself is mid-field), or to the last byte of the buffer.
          if (nextLF < i) nextLF = find(b, LF, i);
          if (nextCR < i) nextCR = find(b, CR, i);
          const eol = nextLF < nextCR ? nextLF : nextCR;
          if (nextQ < i) nextQ = find(b, quote, i);
          while (nextQ < eol && !(nextQ > i && b[nextQ - 1] === delim)) nextQ = find(b, quote, nextQ + 1);
          if (nextQ < eol) {
            // The delimiter before it was taken: the quote is read at a field start.
            const f = step[(FIELD_START << 8) | quote];
            i = (f & TAKE) !== 0 ? nextQ + 1 : nextQ;
            state = f & STATE_MASK;
            continue;
          } else if (eol < n) {
            i = eol;
          } else {
            // No quote opens before the end: the last byte is read in UNQUOTED (FIELD_START reads
            // a byte other than the quote the same way), which tells whether a field starts next.
            i = n - 1;
          }
          break;
        }
        case QUOTED: {
          // Skip to the next quote or escape; line breaks inside the quoted text still count.
          if (nextQ < i) nextQ = find(b, quote, i);
          let stop = nextQ;
          if (esc >= 0) {
            if (nextE < i) nextE = find(b, esc, i);
            if (nextE < stop) stop = nextE;
          }
          if (nextLF < i) nextLF = find(b, LF, i);
          while (nextLF < stop) {
            if (newLine(LF, nextLF > 0 ? b[nextLF - 1] === CR : this.lastCR)) line++;
            nextLF = find(b, LF, nextLF + 1);
          }
          if (nextCR < i) nextCR = find(b, CR, i);
          while (nextCR < stop) {
            line++;
            nextCR = find(b, CR, nextCR + 1);
          }
          i = stop;
          if (i === n) continue;
          // A quote or an escape: no line break, no record start, just the next state.
          const t = step[(QUOTED << 8) | b[i]];
          if ((t & TAKE) !== 0) i++;
          state = t & STATE_MASK;
          continue;
        }
        // QUOTE_SEEN and ESC_SEEN: one byte decides.
      }
      // The grammar's transition for the byte at `i` (never a record start: REC_START is above).
      const c = b[i];
      const t = step[(state << 8) | c];
      if ((t & LINE) !== 0 && newLine(c, i > 0 ? b[i - 1] === CR : this.lastCR)) line++;
      if ((t & TAKE) !== 0) i++;
      state = t & STATE_MASK;
    }

    if (seg < n) {
      this.pieces.push(seg === 0 ? b : b.subarray(seg));
      this.piecesLen += n - seg;
    }
    this.state = state;
    this.line = line;
    this.lineStart = lineStart;
    this.lastCR = b[n - 1] === CR;
    this.fileOffset = base + n;
    if (state !== REC_START) this.checkLength(out, state === BLANK);
  }
}
