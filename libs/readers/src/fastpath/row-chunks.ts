/**
 * The chunks of the record cutter (csv-rows.ts, whose comment describes them): the parts it
 * yields, and how the bytes it has scanned are held (as views of the input buffers) and cut into
 * header, chunks and the pieces of a run. The cutter (RowChunker) extends ChunkAssembly and only
 * scans.
 */
import type { CsvAttributes } from '@tapyard/model';
import { DEFAULT_MAX_BYTES, formatBytes, positiveOption } from '../batch-sink';
import { FatalReadError } from '../record-batch';

/** The header record's bytes (see the module comment). */
export interface CsvHeaderPart {
  kind: 'header';
  bytes: Buffer;
  /** File byte offset of `bytes[0]` (3 after a dropped BOM). */
  offset: number;
}

/** Whole records (or a piece of a run, see the module comment). */
export interface CsvChunk {
  kind: 'chunk';
  bytes: Buffer;
  /** File byte offset of `bytes[0]` (a dropped BOM counts). */
  offset: number;
  /** 1-based physical line of `bytes[0]`: add `startLine - 1` to the reference's lines for this chunk. */
  startLine: number;
  /**
   * Physical line where the first record that starts in this chunk starts (the numbering of
   * RecordBatch.lines); `startLine` when no record starts here.
   */
  firstLine: number;
  /**
   * Records that start in this chunk, exactly as the reference counts them (rows plus row
   * errors; blank lines are not records). In a run, a record whose line begins with more than
   * `maxRecordBytes` of spaces is counted in the piece where its first other byte is.
   */
  records: number;
  /** Begins inside a record that an earlier piece began (part of a run). */
  continues: boolean;
  /** Ends inside a record that the next piece continues (part of a run). */
  open: boolean;
}

export type CsvRowsPart = CsvHeaderPart | CsvChunk;

export const DEFAULT_TARGET_BYTES = 1024 * 1024;

export const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/**
 * The input for reading one chunk or run with the reference reader in utf-8 mode: a BOM first,
 * which readCsv drops, so that a U+FEFF at the start of the chunk stays data, as in the file.
 */
export function readerInput(
  bytes: Buffer | Buffer[],
  encoding: CsvAttributes['encoding'] = 'utf-8',
): Buffer[] {
  const parts = Array.isArray(bytes) ? bytes : [bytes];
  return encoding === 'latin1' ? parts : [UTF8_BOM, ...parts];
}

/** The cutter's chunks in progress and their emission, extended by its scanner (RowChunker). */
export class ChunkAssembly {
  protected readonly target: number;
  protected readonly maxRecord: number;
  /** Physical line (1-based) at the scan position. */
  protected line = 1;
  /** BLANK: where the line started. */
  protected blankOffset = 0;
  /** The record in progress: file offset and line of its first byte. */
  protected recOffset = 0;
  protected recLine = 1;
  /** The current record is being emitted in pieces (a run). */
  protected oversized = false;

  // The chunk in progress: the bytes not yet emitted, as views of input buffers.
  protected pieces: Buffer[] = [];
  protected piecesLen = 0;
  protected chunkOffset = 0;
  protected chunkStartLine = 1;
  protected chunkFirstLine = 0;
  protected chunkRecords = 0;
  protected chunkContinues = false;

  protected headerPending: boolean;
  protected headerSeen = false;
  /** File offset of the next buffer's first byte. */
  protected fileOffset = 0;

  constructor(opts: { targetBytes?: number; maxRecordBytes?: number; header: boolean }) {
    this.target = positiveOption('targetBytes', opts.targetBytes, DEFAULT_TARGET_BYTES);
    this.maxRecord = positiveOption('maxRecordBytes', opts.maxRecordBytes, DEFAULT_MAX_BYTES);
    this.headerPending = opts.header;
  }

  /** Whether to cut at a line start, `size` bytes into the chunk in progress. */
  protected wantsCut(size: number): boolean {
    if (this.headerPending) return this.headerSeen;
    if (this.oversized) return true;
    return size >= this.target;
  }

  protected startRecord(offset: number, line: number): void {
    this.recOffset = offset;
    this.recLine = line;
    if (this.headerPending) {
      this.headerSeen = true;
      return;
    }
    this.chunkRecords++;
    if (this.chunkFirstLine === 0) this.chunkFirstLine = line;
  }

  /** Cut at the scan position (a line start): everything pending becomes one part. */
  protected cut(out: CsvRowsPart[]): void {
    if (this.headerPending) {
      out.push({ kind: 'header', bytes: this.take(this.piecesLen), offset: this.chunkOffset });
      this.headerPending = false;
      this.chunkOffset += out[out.length - 1].bytes.length;
      this.chunkStartLine = this.line;
      return;
    }
    this.emitChunk(out, this.piecesLen, false);
    this.oversized = false;
    this.chunkContinues = false;
  }

  /** At the end of a buffer inside a record (or a maybe-blank line): bound what is held. */
  protected checkLength(out: CsvRowsPart[], blank: boolean): void {
    const start = blank ? this.blankOffset : this.recOffset;
    if (this.fileOffset - start <= this.maxRecord) return;
    if (this.headerPending) {
      throw new FatalReadError(
        `the header row is longer than ${formatBytes(this.maxRecord)} (or does not end), too long to read on its own`,
      );
    }
    if (!this.oversized) {
      this.oversized = true;
      // The records before the long one form a normal chunk (the long one is counted already
      // unless its line is still only spaces).
      const before = blank ? this.chunkRecords : this.chunkRecords - 1;
      if (before > 0) {
        const recLine = this.recLine;
        const len = start - this.chunkOffset;
        const records = this.chunkRecords;
        this.chunkRecords = before;
        this.emitChunk(out, len, false);
        this.chunkStartLine = blank ? this.line : recLine;
        this.chunkRecords = records - before;
        if (!blank) this.chunkFirstLine = recLine;
      }
    }
    this.emitChunk(out, this.piecesLen, true);
    this.chunkContinues = true;
  }

  /** Emits the first `len` pending bytes as a chunk; the rest starts the next chunk. */
  protected emitChunk(out: CsvRowsPart[], len: number, open: boolean): void {
    const bytes = this.take(len);
    out.push({
      kind: 'chunk',
      bytes,
      offset: this.chunkOffset,
      startLine: this.chunkStartLine,
      firstLine: this.chunkRecords > 0 ? this.chunkFirstLine : this.chunkStartLine,
      records: this.chunkRecords,
      continues: this.chunkContinues,
      open,
    });
    this.chunkOffset += len;
    // Callers that cut mid-buffer set the line themselves before cutting (see scan).
    this.chunkStartLine = this.line;
    this.chunkFirstLine = 0;
    this.chunkRecords = 0;
  }

  /** The first `len` pending bytes as one Buffer (a view when they lie in one input buffer). */
  protected take(len: number): Buffer {
    const pieces = this.pieces;
    if (len === this.piecesLen) {
      this.pieces = [];
      this.piecesLen = 0;
      return pieces.length === 1 ? pieces[0] : Buffer.concat(pieces, len);
    }
    const taken: Buffer[] = [];
    let left = len;
    let k = 0;
    while (left > 0) {
      const p = pieces[k];
      if (p.length <= left) {
        taken.push(p);
        left -= p.length;
        k++;
      } else {
        taken.push(p.subarray(0, left));
        pieces[k] = p.subarray(left);
        left = 0;
      }
    }
    this.pieces = pieces.slice(k);
    this.piecesLen -= len;
    return taken.length === 1 ? taken[0] : Buffer.concat(taken, len);
  }
}
