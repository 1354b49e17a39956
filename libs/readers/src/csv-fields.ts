/**
 * The reference CSV reader's records (see csv-reader.ts for the format and its choices): what the
 * tokenizer does at each field and record end of the shared grammar. Fields are cut out of the
 * chunk being scanned or assembled from parts, checked (length, NUL bytes, invalid UTF-8, column
 * count, null markers) and gathered into rows, row errors and the header, for the batch sink. The
 * tokenizer (CsvTokenizer in csv-reader.ts) extends this class and only scans.
 */
import type { CsvReadOptions } from './csv-reader';
import {
  BatchSink,
  DEFAULT_BATCH_BYTES,
  DEFAULT_BATCH_ROWS,
  DEFAULT_MAX_BYTES,
  RAW_BYTES,
  RAW_LIMIT,
  detach,
  formatBytes,
  positiveOption,
} from './batch-sink';
import { DecodedChunk } from './chunks';
import { CsvGrammar } from './csv-grammar';
import { FatalReadError } from './record-batch';

/** Unquoted texts read as null when a pipeline names none: the empty field. */
export const DEFAULT_NULL_VALUES: readonly string[] = [''];

/** No NUL byte or invalid UTF-8 ahead in the chunk. */
export const NONE = 0x7fffffff;
export const EMPTY_CHUNK = new DecodedChunk(Buffer.alloc(0), 'ascii');
/** `Array`, bound once: a global lookup per row is slow inside a vm context (as under Jest). */
const RowArray = Array;

/** A line holding nothing but blank bytes (spaces and tabs, see CsvGrammar.blank). */
function isBlank(s: string, blank: Uint8Array): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c > 0xff || blank[c] === 0) return false;
  }
  return true;
}

/** Fields and records of the reference reader, fed by its tokenizer (a subclass: calls stay monomorphic). */
export class CsvRecordBuilder {
  protected readonly grammar: CsvGrammar;
  readonly sink: BatchSink;
  protected readonly maxField: number;
  /** Most bytes of a record's kept fields together (a record may have up to maxColumns fields). */
  protected readonly maxRecord: number;
  protected readonly maxColumns: number;
  protected readonly expectedColumns: number | undefined;
  protected readonly limitText: string;
  protected readonly recordLimitText: string;
  /** Unquoted texts that are null (none: every cell is text), and the longest of them. */
  protected readonly nulls: Set<string> | null;
  protected readonly nullMaxLen: number;
  /** Current physical line (1-based). */
  protected line = 1;
  protected recLine = 1;
  protected quoteLine = 1;
  protected cells: (string | null)[] = [];
  /** The text of field 1 when it was read as null (a null marker may still be a blank line). */
  protected firstNullText: string | null = null;
  protected fieldCount = 0;
  /** Bytes of the current record's kept fields so far. */
  protected recordBytes = 0;
  protected fieldQuoted = false;
  protected rowError: string | null = null;
  /** Pieces of the current field when it straddles chunks or holds escapes. */
  protected parts: string[] = [];
  protected partsLen = 0;
  protected carrying = false;
  protected oversize = false;
  /** The start of the current record, from earlier chunks, for RowError.raw. */
  protected rawHead = '';
  protected headerPending: boolean;
  /** Expected fields per record; -1 until known. */
  protected width = -1;
  /** Fields of a record that are decoded and kept (more only count). */
  protected cellLimit: number;
  protected records = 0;

  // The chunk being scanned.
  protected chunk = EMPTY_CHUNK;
  protected nextNul = NONE;
  protected badPos: number[] = [];
  protected badOffsets: number[] = [];
  protected badIdx = 0;
  protected nextBad = NONE;

  constructor(opts: CsvReadOptions) {
    this.grammar = new CsvGrammar(opts);
    this.maxField = positiveOption('maxFieldBytes', opts.maxFieldBytes, DEFAULT_MAX_BYTES);
    this.maxRecord = positiveOption('maxRecordBytes', opts.maxRecordBytes, DEFAULT_MAX_BYTES);
    this.maxColumns = positiveOption('maxColumns', opts.maxColumns, 10_000);
    this.expectedColumns =
      opts.expectedColumns === undefined
        ? undefined
        : positiveOption('expectedColumns', opts.expectedColumns, 1);
    this.limitText = formatBytes(this.maxField);
    this.recordLimitText = formatBytes(this.maxRecord);
    this.sink = new BatchSink(
      positiveOption('batchRows', opts.batchRows, DEFAULT_BATCH_ROWS),
      undefined,
      positiveOption('batchBytes', opts.batchBytes, DEFAULT_BATCH_BYTES),
    );
    this.headerPending = opts.header;
    const nullValues = opts.nullValues ?? DEFAULT_NULL_VALUES;
    this.nulls = nullValues.length > 0 ? new Set(nullValues) : null;
    this.nullMaxLen = Math.max(0, ...nullValues.map((v) => v.length));
    if (this.expectedColumns !== undefined) this.width = this.expectedColumns;
    this.cellLimit = opts.header || this.width < 0 ? this.maxColumns : this.width;
  }

  /** The input ended inside quotes: the record is an error (fatal for the header). */
  protected endUnterminated(): void {
    const reason = `unterminated quoted field starting at line ${this.quoteLine}`;
    this.records++;
    if (this.headerPending) throw new FatalReadError(`the header row is unusable: ${reason}`, this.recLine);
    this.sink.addError(this.recLine, reason, this.rawHead);
  }

  /** The input ended between records. */
  protected endInput(): void {
    if (this.records === 0) throw new FatalReadError('the file is empty');
    this.sink.finish(true);
  }

  protected markRow(reason: string): void {
    if (this.rowError === null) this.rowError = reason;
  }

  /** A NUL byte or invalid UTF-8 before `e` in field `idx` (0-based): the first one by position. */
  protected markBytes(idx: number, e: number): void {
    if (this.nextNul < e && this.nextNul <= this.nextBad) this.markRow(`NUL byte in field ${idx + 1}`);
    else this.markRow(`invalid UTF-8 at byte offset ${this.badOffsets[this.badIdx]}`);
  }

  /**
   * The record's kept fields passed maxRecordBytes: its error, and what it kept is let go at once
   * (the rest of it is only scanned).
   */
  protected recordTooLarge(): void {
    this.markRow(`record exceeds ${this.recordLimitText}`);
    this.cells = this.width > 0 ? new RowArray<string>(this.width) : [];
  }

  /** Keeps bytes [s, e) as a piece of the field in progress (bounded by maxFieldBytes). */
  /** `hs`/`he`: counts of bytes >= 0x80 in the chunk before s and before e. */
  protected pushPart(s: number, e: number, hs: number, he: number): void {
    this.carrying = true;
    if (this.rowError === null && this.fieldCount < this.cellLimit) this.appendPart(s, e, hs, he);
  }

  protected appendPart(s: number, e: number, hs: number, he: number): void {
    if (e <= s || this.oversize) return;
    const len = e - s;
    if (this.partsLen + len > this.maxField) {
      this.oversize = true;
      this.parts = [];
      this.partsLen = 0;
      return;
    }
    if (this.recordBytes + this.partsLen + len > this.maxRecord) {
      this.recordTooLarge();
      this.parts = [];
      this.partsLen = 0;
      return;
    }
    this.parts.push(this.chunk.field(s, e, hs === he));
    this.partsLen += len;
  }

  /** Removes the escape character kept at the end of the previous chunk. */
  protected dropLastChar(): void {
    const last = this.parts.pop();
    if (last !== undefined) {
      this.parts.push(last.slice(0, -1));
      this.partsLen--;
    }
  }

  /** The field ends at `e`; `hs`/`he`: counts of bytes >= 0x80 in the chunk before s and before e. */
  protected endField(s: number, e: number, hs: number, he: number): void {
    if (e < s) e = s;
    const idx = this.fieldCount++;
    if (this.nextNul < e || this.nextBad < e) {
      this.markBytes(idx, e);
      if (this.nextNul < e) {
        const next = this.chunk.bytes.indexOf(0, e);
        this.nextNul = next < 0 ? NONE : next;
      }
      if (this.nextBad < e) {
        const bad = this.badPos;
        let k = this.badIdx;
        while (k < bad.length && bad[k] < e) k++;
        this.badIdx = k;
        this.nextBad = k < bad.length ? bad[k] : NONE;
      }
    }
    if (!this.carrying) {
      if (this.rowError !== null || idx >= this.cellLimit) return;
      if (e - s > this.maxField) {
        this.markRow(`field ${idx + 1} exceeds ${this.limitText}`);
        return;
      }
      this.recordBytes += e - s;
      if (this.recordBytes > this.maxRecord) {
        this.recordTooLarge();
        return;
      }
      this.setCell(idx, this.chunk.field(s, e, hs === he));
      return;
    }
    if (this.rowError === null && idx < this.cellLimit) {
      this.appendPart(s, e, hs, he);
      if (this.oversize) this.markRow(`field ${idx + 1} exceeds ${this.limitText}`);
      else if (this.rowError === null) {
        this.recordBytes += this.partsLen;
        this.setCell(idx, this.parts.length === 1 ? this.parts[0] : this.parts.join(''));
      }
    }
    this.parts = [];
    this.partsLen = 0;
    this.carrying = false;
    this.oversize = false;
  }

  protected setCell(idx: number, text: string): void {
    const nulls = this.nulls;
    if (
      nulls !== null &&
      !this.fieldQuoted &&
      !this.headerPending &&
      text.length <= this.nullMaxLen &&
      nulls.has(text)
    ) {
      this.cells[idx] = null;
      if (idx === 0) this.firstNullText = text;
    } else this.cells[idx] = text;
  }

  /** The record ends at `pos` (its terminator) in the current chunk. */
  protected endRecord(recStart: number, pos: number): void {
    const count = this.fieldCount;
    const error = this.rowError;
    const cells = this.cells;
    this.cells = this.width > 0 ? new RowArray<string>(this.width) : [];
    this.fieldCount = 0;
    this.rowError = null;
    const bytes = this.recordBytes;
    this.recordBytes = 0;
    const first = cells[0] ?? this.firstNullText ?? '';
    this.firstNullText = null;
    if (count === 1 && error === null && !this.fieldQuoted && isBlank(first, this.grammar.blank)) return;
    this.records++;
    if (this.headerPending) {
      this.headerPending = false;
      if (count > this.maxColumns) {
        throw new FatalReadError(
          `the header has ${count} columns, more than the limit of ${this.maxColumns}`,
          this.recLine,
        );
      }
      if (error !== null) throw new FatalReadError(`the header row is unusable: ${error}`, this.recLine);
      if (cells.length > count) cells.length = count;
      this.sink.setHeader(cells.map((c) => detach(c ?? '')));
      if (this.width < 0) this.width = count;
      this.cellLimit = this.width;
      return;
    }
    if (this.width < 0) {
      if (count > this.maxColumns) {
        throw new FatalReadError(
          `the first record has ${count} fields, more than the limit of ${this.maxColumns}`,
          this.recLine,
        );
      }
      this.width = count;
      this.cellLimit = count;
    }
    if (error === null && count === this.width) {
      this.sink.addRow(cells, this.recLine, bytes);
      return;
    }
    const reason = error ?? `row has ${count} fields, expected ${this.width}`;
    const head = this.rawHead;
    const raw =
      head.length >= RAW_LIMIT
        ? head
        : head + this.chunk.slice(recStart, Math.min(pos, recStart + RAW_BYTES));
    this.sink.addError(this.recLine, reason, raw);
  }
}
