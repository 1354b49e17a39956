/**
 * The fast path of a CSV upload into a destination that takes clean CSV as it is (PostgreSQL's
 * COPY … CSV): the file is cut into row-aligned chunks, and each chunk the byte-level check passes
 * goes out unparsed; any other chunk (and any record longer than the chunk limit) is read by the
 * validating path, with its line numbers, rejects and typed values exactly as for the whole file.
 * Why that is the same result: see fastpath/csv-check.ts and its specs against PostgreSQL.
 */
import type { WriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import type { CsvChunkPayload, Payload } from '@tapyard/destinations';
import type { CsvAttributes, SchemaField, TypedBatch } from '@tapyard/model';
import {
  CsvVerdict,
  compileCsvCheck,
  copyCsvOptions,
  CsvChunk,
  CsvRowsPart,
  csvRows,
  readerInput,
  readCsv,
  RecordBatch,
} from '@tapyard/readers';
import { BatchBuilder, RowPlan } from '../row-plan';
import { convert } from './convert';
import type { Counts } from './protocol';

export class FastCsvInput {
  private readonly parts: AsyncGenerator<CsvRowsPart>;
  private pending: CsvRowsPart | null = null;
  private check: ((chunk: Buffer) => CsvVerdict) | null = null;
  private width = 0;
  private columns: string[] = [];
  private copyOptions = '';
  /** Chunks that went out as they are, and those the validating path read (for the job's notes). */
  readonly tally = { clean: 0, checked: 0 };

  constructor(
    input: AsyncIterable<Buffer>,
    private readonly attrs: CsvAttributes,
  ) {
    this.parts = csvRows(input, { ...attrs, header: true });
  }

  /** The header's names (read by the reference reader, as the validating path would). */
  async header(): Promise<string[] | null> {
    const first = await this.parts.next();
    if (first.done) return null;
    if (first.value.kind !== 'header') {
      this.pending = first.value;
      return null;
    }
    for await (const batch of readCsv(Readable.from(readerInput(first.value.bytes)), {
      ...this.attrs,
      header: true,
    })) {
      if (batch.header) return batch.header;
    }
    return null;
  }

  /** `fileColumns`: the schema names of the file's columns, in file order. */
  plan(fileColumns: string[], fields: SchemaField[]): void {
    const schema = fileColumns.map((c) => fields.find((f) => f.name === c));
    const types = schema.map((f) => f?.type ?? 'string');
    this.width = fileColumns.length;
    this.columns = fileColumns;
    // A column the schema does not have (schema contract discard_columns or discard_rows) cannot go
    // out unparsed: every chunk is then read by the validating path, which drops it or rejects its row.
    const known = new Set(fields.map((f) => f.name));
    this.check = fileColumns.every((c) => known.has(c))
      ? compileCsvCheck({ ...this.attrs, types, limits: schema.map((f) => f ?? {}) })
      : null;
    this.copyOptions = copyCsvOptions(this.attrs);
  }

  /**
   * The next payloads (a clean chunk as it is, or the encoded batches of a chunk the validating
   * path read), or null at the end of the file.
   */
  async next(
    plan: RowPlan,
    builder: BatchBuilder,
    encode: (batch: TypedBatch) => Payload[],
    counts: Counts,
    rejects: WriteStream,
  ): Promise<Payload[] | null> {
    for (;;) {
      const part = this.pending ?? (await this.parts.next()).value;
      this.pending = null;
      if (part === undefined) return null;
      if (part.kind !== 'chunk' || part.records === 0) continue;
      const verdict = part.open || part.continues || this.check === null ? null : this.check(part.bytes);
      if (verdict?.clean) {
        this.tally.clean++;
        counts.rows += verdict.records;
        counts.unparsed += verdict.records;
        const payload: CsvChunkPayload = {
          kind: 'csv',
          // A copy of just these bytes: the chunk may be a view into a larger input buffer.
          bytes: new Uint8Array(part.bytes),
          rows: verdict.records,
          eol: verdict.eol,
          copyOptions: this.copyOptions,
          columns: this.columns,
        };
        return [payload];
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
    const shift = first.startLine - 1;
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
      const next = await this.parts.next();
      if (next.done || next.value.kind !== 'chunk') return;
      yield next.value.bytes;
      open = next.value.open;
    }
  }
}
