/**
 * The fast path of a CSV upload into a destination that takes clean CSV as it is (PostgreSQL's
 * COPY … CSV): clean records go out unparsed; any others (and any record longer than the chunk
 * limit) are read by the validating path, with their line numbers, rejects and typed values exactly
 * as for the whole file. Why that is the same result: see fastpath/csv-check.ts and its specs
 * against PostgreSQL.
 *
 * Each part of the input is checked where it lies (compileCsvPrefixCheck): its whole records go out
 * as a view of the part, whose buffer is transferred to the runner with them, and only the record
 * cut by the part's end is copied, to be checked with the next part's first bytes. So every byte is
 * walked once and copied by nobody. From the first record the check refuses to the end of the
 * file, the input goes through the cutter (csvRows) instead, chunk by chunk: clean chunks still go
 * out unparsed, the others through the validating path.
 */
import { Readable } from 'node:stream';
import type { CsvChunkPayload, Payload } from '@tapyard/destinations';
import type { CsvAttributes, DataQualityRule, SchemaField, TypedBatch } from '@tapyard/model';
import {
  CsvHeaderPart,
  CsvLineEnding,
  CsvPrefixVerdict,
  CsvVerdict,
  compileCsvCheck,
  compileCsvPrefixCheck,
  copyCsvOptions,
  CsvChunk,
  CsvRowsPart,
  csvRows,
  readerInput,
  readCsv,
  RecordBatch,
} from '@tapyard/readers';
import { fastPathCellRules } from '../data-quality-rules';
import { BatchBuilder, RowPlan } from '../row-plan';
import { RejectSink, convert } from './convert';
import type { Counts } from './protocol';

/**
 * Bytes of a part's start first read with the record the previous part cut, to finish it (eight
 * times more each time no record ends in them): what is checked with the carry is copied, so little.
 */
const CARRY_PROBE = 1 << 10;
/** Bytes of the file's start in which the header is looked for first. */
const HEADER_PROBE = 64 << 10;

export class FastCsvInput {
  private readonly input: AsyncIterator<Buffer>;
  /** The cutter's parts: from the start when the header could not be found in place, else from where the in-place path stopped. */
  private parts: AsyncGenerator<CsvRowsPart> | null = null;
  private pending: CsvRowsPart | null = null;
  private check: ((chunk: Buffer) => CsvVerdict) | null = null;
  private prefixCheck: ((b: Buffer) => CsvPrefixVerdict) | null = null;
  private width = 0;
  private columns: string[] = [];
  private copyOptions = '';
  // The in-place path: the part being read (from `pos`), and the record an earlier part cut (a copy).
  private body: Buffer | null = null;
  private pos = 0;
  private carry: Buffer | null = null;
  /** Physical line where the carry (or, without one, `pos`) starts. */
  private line = 1;
  /** Lines of the file before the cutter's input (its line numbers start at 1). */
  private lineShift = 0;
  /** Bytes of a part checked at a time (0: the whole part at once); see readInWindows. */
  private window = 0;
  /** Chunks that went out as they are, and those the validating path read (for the job's notes). */
  readonly tally = { clean: 0, checked: 0 };

  constructor(
    input: AsyncIterable<Buffer>,
    private readonly attrs: CsvAttributes,
  ) {
    this.input = input[Symbol.asyncIterator]();
  }

  /** Whether the input is still read in place (not by the cutter, which may hold a part's memory). */
  get readsInPlace(): boolean {
    return this.parts === null;
  }

  /** Whether the reader still holds memory `b` (the part it reads, or the record a part cut). */
  holds(b: ArrayBufferLike): boolean {
    return this.body?.buffer === b || this.carry?.buffer === b;
  }

  /**
   * Checks each part in windows of `bytes` (a record longer than one in a larger one), each window's
   * records a chunk of their own: for a job whose encoder writes every chunk in this thread, so its
   * first pieces follow one window's check instead of the whole part's (4 MiB: the loader, which
   * had sent what it held, waited that long at each part). Those chunks are views of the part, which
   * the thread keeps until its last window (`holds`): one handed on as it is must be copied.
   */
  readInWindows(bytes: number): void {
    this.window = bytes;
  }

  /** Whether parts are read in windows (see readInWindows). */
  get windowed(): boolean {
    return this.window > 0;
  }

  /** The header's names (read by the reference reader, as the validating path would). */
  async header(): Promise<string[] | null> {
    const first = await this.input.next();
    const found = first.done ? null : await this.headerInPlace(first.value);
    if (found === null) {
      this.parts = csvRows(chain(first.done ? [] : [first.value], this.input), {
        ...this.attrs,
        header: true,
      });
      const part = await this.parts.next();
      if (part.done) return null;
      if (part.value.kind !== 'header') {
        this.pending = part.value;
        return null;
      }
      return this.names(part.value.bytes);
    }
    this.body = first.value as Buffer;
    this.pos = found.bodyStart;
    this.line = found.line;
    return this.names(found.bytes);
  }

  /**
   * The header record at the start of `b`, when it ends inside `b` with bytes after it: where the
   * body starts and on which line. Found by the cutter on the first bytes (or all of `b`).
   */
  private async headerInPlace(b: Buffer): Promise<{ bytes: Buffer; bodyStart: number; line: number } | null> {
    for (const size of new Set([Math.min(b.length, HEADER_PROBE), b.length])) {
      let header: CsvHeaderPart | null = null;
      for await (const part of csvRows(only(b.subarray(0, size)), { ...this.attrs, header: true })) {
        if (part.kind === 'header') header = part;
        else if (header !== null) {
          const bodyStart = header.offset + header.bytes.length;
          return bodyStart < size ? { bytes: header.bytes, bodyStart, line: part.startLine } : null;
        }
      }
    }
    return null;
  }

  private async names(bytes: Buffer): Promise<string[] | null> {
    for await (const batch of readCsv(Readable.from(readerInput(bytes)), { ...this.attrs, header: true })) {
      if (batch.header) return batch.header;
    }
    return null;
  }

  /**
   * `fileColumns`: the schema names of the file's columns, in file order. A record that fails one of
   * the `rules` is never clean: the validating path rejects it (see fastPathCellRules).
   */
  plan(fileColumns: string[], fields: SchemaField[], rules: readonly DataQualityRule[] = []): void {
    const schema = fileColumns.map((c) => fields.find((f) => f.name === c));
    const types = schema.map((f) => f?.type ?? 'string');
    this.width = fileColumns.length;
    this.columns = fileColumns;
    // A column the schema does not have (schema contract discard_columns or discard_rows) cannot go
    // out unparsed: every chunk is then read by the validating path, which drops it or rejects its row.
    const known = new Set(fields.map((f) => f.name));
    const cellRules = fastPathCellRules(rules, fields, fileColumns);
    if (fileColumns.every((c) => known.has(c)) && cellRules !== null) {
      const opts = { ...this.attrs, types, limits: schema.map((f) => f ?? {}), cellRules };
      this.check = compileCsvCheck(opts);
      this.prefixCheck = compileCsvPrefixCheck(opts);
    }
    this.copyOptions = copyCsvOptions(this.attrs);
  }

  /**
   * The next payloads (clean records as they are, or the encoded batches of a chunk the validating
   * path read), or null at the end of the file.
   */
  async next(
    plan: RowPlan,
    builder: BatchBuilder,
    encode: (batch: TypedBatch) => Payload[],
    counts: Counts,
    rejects: RejectSink,
  ): Promise<Payload[] | null> {
    while (this.parts === null) {
      const check = this.prefixCheck;
      if (check === null) {
        this.leave();
        break;
      }
      if (this.body === null) {
        const r = await this.input.next();
        if (r.done) {
          const last = this.lastRecords(counts);
          if (last !== null) return last;
          if (this.parts === null) return null;
          break;
        }
        this.body = r.value;
        this.pos = 0;
      }
      const out = this.inPlace(this.body, check, counts);
      if (out.length > 0) return out;
    }
    return this.nextPart(plan, builder, encode, counts, rejects);
  }

  /** The whole records of one part (and the one an earlier part cut), checked where they lie. */
  private inPlace(b: Buffer, check: (b: Buffer) => CsvPrefixVerdict, counts: Counts): CsvChunkPayload[] {
    const out: CsvChunkPayload[] = [];
    const carry = this.carry;
    if (carry !== null) {
      for (let size = Math.min(b.length, CARRY_PROBE); ; size = Math.min(b.length, size * 8)) {
        const probe = Buffer.concat([carry, b.subarray(0, size)]);
        const v = check(probe);
        if (!v.clean) {
          this.leave();
          return out;
        }
        if (v.records > 0) {
          out.push(this.payload(copyOf(probe.subarray(0, v.end)), v, this.line, counts));
          this.line += v.lines;
          this.pos = v.end - carry.length;
          this.carry = null;
          break;
        }
        if (size === b.length) {
          // No record ends in this part either: the cutter reads a record this long in pieces.
          if (probe.length > MAX_CARRY_BYTES) this.leave();
          else {
            this.carry = probe;
            this.body = null;
          }
          return out;
        }
      }
    }
    const rest = b.subarray(this.pos);
    let size = this.window > 0 ? Math.min(rest.length, this.window) : rest.length;
    let v = check(rest.subarray(0, size));
    // No record ends in the window: a larger one.
    while (v.clean && v.records === 0 && size < rest.length) {
      size = Math.min(rest.length, size * 8);
      v = check(rest.subarray(0, size));
    }
    if (!v.clean) {
      this.leave();
      return out;
    }
    if (v.records > 0) {
      // A view of the part: its buffer goes to the runner with it (only this payload refers to it),
      // or, in windows, stays here until the part's last window (see readInWindows).
      const owned = this.window > 0 || (b.byteOffset === 0 && b.buffer.byteLength === b.length);
      const bytes = rest.subarray(0, v.end);
      out.push(this.payload(owned ? bytes : copyOf(bytes), v, this.line, counts));
      this.line += v.lines;
    }
    if (size < rest.length) {
      // The part goes on: the next window starts after these records.
      this.pos += v.end;
      return out;
    }
    this.carry = v.end < rest.length ? Buffer.from(rest.subarray(v.end)) : null;
    this.body = null;
    return out;
  }

  /** At the end of the input: the record the last part left (it has no line break), or null. */
  private lastRecords(counts: Counts): CsvChunkPayload[] | null {
    if (this.carry === null) return null;
    const v = (this.check as (chunk: Buffer) => CsvVerdict)(this.carry);
    if (!v.clean) {
      this.leave();
      return null;
    }
    const p = this.payload(copyOf(this.carry), v, this.line, counts);
    this.carry = null;
    return [p];
  }

  private payload(
    bytes: Uint8Array,
    v: { records: number; eol: CsvLineEnding | null },
    line: number,
    counts: Counts,
  ): CsvChunkPayload {
    this.tally.clean++;
    counts.rows += v.records;
    counts.unparsed += v.records;
    return {
      kind: 'csv',
      bytes,
      rows: v.records,
      line,
      eol: v.eol,
      copyOptions: this.copyOptions,
      columns: this.columns,
    };
  }

  /** From here to the end of the file, the cutter reads the input (from the carry, or the part's rest). */
  private leave(): void {
    const head: Buffer[] = [];
    if (this.carry !== null) head.push(this.carry);
    if (this.body !== null) head.push(this.body.subarray(this.pos));
    this.carry = null;
    this.body = null;
    this.lineShift = this.line - 1;
    // readerInput: a BOM in front, which the cutter drops, so that a U+FEFF here stays data.
    this.parts = csvRows(chain(readerInput(head, this.attrs.encoding), this.input), {
      ...this.attrs,
      header: false,
    });
  }

  /** The cutter's next chunk: as it is when clean, else through the validating path. */
  private async nextPart(
    plan: RowPlan,
    builder: BatchBuilder,
    encode: (batch: TypedBatch) => Payload[],
    counts: Counts,
    rejects: RejectSink,
  ): Promise<Payload[] | null> {
    const parts = this.parts as AsyncGenerator<CsvRowsPart>;
    for (;;) {
      const part = this.pending ?? (await parts.next()).value;
      this.pending = null;
      if (part === undefined) return null;
      if (part.kind !== 'chunk' || part.records === 0) continue;
      const verdict = part.open || part.continues || this.check === null ? null : this.check(part.bytes);
      if (verdict?.clean) {
        // A copy of just these bytes: the chunk may be a view into a larger input buffer.
        return [this.payload(copyOf(part.bytes), verdict, this.lineShift + part.firstLine, counts)];
      }
      this.tally.checked++;
      const out: Payload[] = [];
      for await (const batch of this.validate(part)) {
        out.push(...encode(convert(batch, plan, counts, rejects, null, null, builder)));
      }
      return out;
    }
  }

  /**
   * A chunk (or a run: a record longer than the chunk limit, in pieces) through the reference
   * reader, its line numbers moved to the file's.
   */
  private async *validate(first: CsvChunk): AsyncGenerator<RecordBatch> {
    const shift = this.lineShift + first.startLine - 1;
    const run = this.runOf(first);
    const input = Readable.from(
      (async function* () {
        let head = true;
        for await (const piece of run) {
          // The reference drops a leading BOM: one in front keeps a U+FEFF at the chunk's start as data.
          if (head) yield* readerInput(piece);
          else yield piece;
          head = false;
        }
      })(),
    );
    for await (const batch of readCsv(input, { ...this.attrs, header: false, expectedColumns: this.width })) {
      for (let i = 0; i < batch.lines.length; i++) batch.lines[i] += shift;
      for (const e of batch.errors) e.line += shift;
      yield batch;
    }
  }

  /** The pieces of a chunk: itself, and while it ends inside a record, the pieces that continue it. */
  private async *runOf(first: CsvChunk): AsyncGenerator<Buffer> {
    yield first.bytes;
    let open = first.open;
    while (open) {
      const next = await (this.parts as AsyncGenerator<CsvRowsPart>).next();
      if (next.done || next.value.kind !== 'chunk') return;
      yield next.value.bytes;
      open = next.value.open;
    }
  }
}

/** A record longer than this is left to the cutter, which reads it in pieces (as its limit). */
const MAX_CARRY_BYTES = 16 << 20;

/** A copy with a buffer of its own (transferable; Buffer.from could share a pool). */
function copyOf(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(bytes);
}

async function* chain(head: Buffer[], rest: AsyncIterator<Buffer>): AsyncGenerator<Buffer> {
  yield* head;
  for (;;) {
    const r = await rest.next();
    if (r.done) return;
    yield r.value;
  }
}

async function* only(b: Buffer): AsyncGenerator<Buffer> {
  yield b;
}
