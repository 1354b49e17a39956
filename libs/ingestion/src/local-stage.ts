/**
 * A small whole input (an upload carried in its job, IngestPayload.inline) read, checked and encoded
 * on the worker's main thread, with the stage thread's own pure functions (the reader, FastCsvInput,
 * RowPlan, the validation-schema check, the encoders): the same rows, types, rejects and counts,
 * without the thread's round trips (start, first, plan, planned, next, batch, end: each a message
 * that wakes the other thread, a large part of a small job's cost).
 *
 * The stage thread exists so that a pathological input cannot stop the worker's event loop; on this
 * path the input is bounded (INLINE_UPLOAD_BYTES, 32 KiB), a column has at most 16 rules, and rule
 * patterns all run on V8 within 16 backtracking steps a character (see compileLinearRegex), so
 * rules hold the event loop for milliseconds. A pattern re2js runs is linear too, but its worst case
 * per character grows with the pattern (up to about 11 µs): such a job keeps the thread, as do jobs
 * with CodeGen scripts (processes of their own) and the tests' stall hook. A JSON Schema runs here
 * only when it has no pattern, no recursion and few subschemas (jsonSchemaSuitsMainThread): its
 * patterns are re2js's too, and a recursive schema may apply a subschema many times to each level of
 * a value. An XSD runs here: its checks have a thread of their own with a deadline.
 */
import { Readable } from 'node:stream';
import { RejectedRow, Payload } from '@tapyard/destinations';
import { PipelineDefinition, TypedBatch, compileLinearRegex } from '@tapyard/model';
import { IngestPayload } from '@tapyard/queue';
import { jsonSchemaSuitsMainThread } from '@tapyard/configfiles';
import { FatalReadError, RecordBatch } from '@tapyard/readers';
import { CODEGEN_KINDS } from '@tapyard/scripts';
import { instructionOf } from '@tapyard/codegen';
import { BatchBuilder, RowPlan } from './row-plan';
import { Counts, PlanMessage } from './stage-thread/protocol';
import { RecordValidator, convert, newCounts, recordValidator } from './stage-thread/convert';
import { readInput } from './stage-thread/read-input';
import { FastCsvInput } from './stage-thread/fast-csv';
import { binaryRows, csvEncoderOf, encoderOf, pieces } from './stage-thread/encoders';
import { StageThreadError } from './stage-thread/stage-thread';
import type { CsvChunkPayload } from '@tapyard/destinations';

/** What a job's runner asks of its stages, on the stage thread (StageSession) or here. */
export interface StageRun {
  first(): Promise<{ header: string[] | null; width: number | null }>;
  warm(scripts: PlanMessage['scripts']): void;
  plan(
    definition: PipelineDefinition,
    fileColumns: string[],
    schema: { file: string; text: string } | null,
    encoders: PlanMessage['encoders'],
    scripts: PlanMessage['scripts'],
  ): Promise<void>;
  next(): Promise<
    | { payloads: Payload[][]; counts: Counts; spent?: ArrayBuffer[] }
    | { end: Counts; sample: Record<string, unknown>[] }
  >;
  readonly finished: boolean;
  end(): void;
}

/**
 * Whether the job's stages run on the main thread (see the module's comment). `schema`: the text of
 * the pipeline's validation schema, null when it has none or it could not be read (the thread reports that).
 */
export function runsOnMainThread(
  p: IngestPayload,
  def: PipelineDefinition,
  spinOn: string | null,
  schema: { file: string; text: string } | null,
): boolean {
  return (
    p.inline !== undefined &&
    p.records === undefined &&
    spinOn === null &&
    CODEGEN_KINDS.every((k) => instructionOf(def, k) === null) &&
    def.dataQuality.rules.every((r) => r.type !== 'regex' || runsOnV8(r.pattern)) &&
    schemaSuitsMainThread(def.dataQuality.validationSchema, schema)
  );
}

function schemaSuitsMainThread(
  file: string | undefined,
  schema: { file: string; text: string } | null,
): boolean {
  if (!file) return true;
  if (schema === null || schema.file !== file) return false;
  return file.endsWith('.xsd') || jsonSchemaSuitsMainThread(schema.text);
}

/** Whether a rule's pattern runs on V8; one that does not compile is the stage thread's to report. */
function runsOnV8(pattern: string): boolean {
  try {
    return compileLinearRegex(pattern).engine === 'v8';
  } catch {
    return false;
  }
}

export class LocalStage implements StageRun {
  private fast: FastCsvInput | null = null;
  private batches: AsyncGenerator<RecordBatch> | null = null;
  private readonly firstRead: Promise<{ header: string[] | null; width: number | null }>;
  private firstBatch: RecordBatch | null = null;
  private rowPlan: RowPlan | null = null;
  private builder: BatchBuilder | null = null;
  private encoders: ((batch: TypedBatch) => Payload[])[] = [];
  private csvEncoder: ((chunk: CsvChunkPayload) => Iterable<Payload[]>) | null = null;
  private rest: Iterator<Payload[]> | null = null;
  private validator: RecordValidator | null = null;
  private readonly counts: Counts = newCounts();
  /** The rejected rows' JSON lines, as the stage thread writes them to its rejects file. */
  private readonly rejected: string[] = [];
  private done = false;

  constructor(job: { input: Buffer; definition: PipelineDefinition; filename: string; fast: boolean }) {
    this.firstRead = this.readFirst(job);
    this.firstRead.catch(() => undefined); // seen when first() is awaited
  }

  private async readFirst(job: {
    input: Buffer;
    definition: PipelineDefinition;
    filename: string;
    fast: boolean;
  }): Promise<{ header: string[] | null; width: number | null }> {
    const input = Readable.from([job.input], { highWaterMark: 2 });
    if (job.fast) {
      this.fast = new FastCsvInput(input, job.definition.source.fileAttributes.csvAttributes);
      const header = await this.fast.header();
      return { header, width: header?.length ?? null };
    }
    this.batches = readInput(job.definition, input, null, job.filename);
    const first = await this.batches.next();
    this.firstBatch = first.done ? { rows: [], lines: [], errors: [] } : first.value;
    return { header: this.firstBatch.header ?? null, width: this.firstBatch.rows[0]?.length ?? null };
  }

  first(): Promise<{ header: string[] | null; width: number | null }> {
    return stage(() => this.firstRead);
  }

  warm(): void {
    // No scripts run on this path (runsOnMainThread).
  }

  plan(
    definition: PipelineDefinition,
    fileColumns: string[],
    schema: { file: string; text: string } | null,
    encoders: PlanMessage['encoders'],
    scripts: PlanMessage['scripts'],
  ): Promise<void> {
    return stage(() => this.planNow(definition, fileColumns, schema, encoders, scripts));
  }

  private async planNow(
    definition: PipelineDefinition,
    fileColumns: string[],
    schema: { file: string; text: string } | null,
    encoders: PlanMessage['encoders'],
    scripts: PlanMessage['scripts'],
  ): Promise<void> {
    if (scripts.length > 0) throw new Error('a job with CodeGen scripts runs its stages on a stage thread');
    this.rowPlan = new RowPlan(definition, fileColumns, null);
    this.builder = new BatchBuilder(this.rowPlan.outColumns);
    const columns = this.rowPlan.outColumns;
    this.fast?.plan(fileColumns, definition.source.schemaProperties.fields, definition.dataQuality.rules);
    this.encoders = encoders.map((e) => encoderOf(e.module, e.maxBatchRows, columns));
    if (this.fast && encoders.length === 1) {
      const e = encoders[0];
      this.csvEncoder = csvEncoderOf(e.module, e.maxBatchRows, columns, fileColumns, definition, e.shape);
    }
    if (schema !== null) {
      const rowElement = definition.source.fileAttributes.xmlAttributes?.rowElement ?? 'row';
      this.validator = await recordValidator(schema, rowElement).catch((err: unknown) => {
        throw new StageThreadError('schema', messageOf(err));
      });
    }
  }

  /** As StageSession.next: each batch with a copy of the counts so far (the thread's reply is a copy). */
  next(): Promise<
    { payloads: Payload[][]; counts: Counts } | { end: Counts; sample: Record<string, unknown>[] }
  > {
    return stage(async () => {
      const payloads = await this.nextPayloads();
      if (payloads === null) {
        this.done = true;
        return { end: { ...this.counts }, sample: [] };
      }
      return { payloads, counts: { ...this.counts } };
    });
  }

  private async nextPayloads(): Promise<Payload[][] | null> {
    const plan = this.rowPlan;
    const builder = this.builder;
    if (plan === null || builder === null) throw new Error("'next' before 'plan'");
    const sink = { write: (line: string) => this.rejected.push(line) };
    if (this.fast) {
      const piece = this.rest?.next();
      if (piece !== undefined && piece.done !== true) {
        this.counts.binary += binaryRows(piece.value);
        return [piece.value];
      }
      this.rest = null;
      const payloads = await this.fast.next(plan, builder, this.encoders[0], this.counts, sink);
      if (payloads === null || this.csvEncoder === null) return payloads && [payloads];
      this.rest = pieces(payloads, this.csvEncoder);
      const first = this.rest.next();
      const head = first.done === true ? [] : first.value;
      this.counts.binary += binaryRows(head);
      return [head];
    }
    let batch = this.firstBatch;
    this.firstBatch = null;
    if (batch === null) {
      const r = await (this.batches as AsyncGenerator<RecordBatch>).next();
      if (r.done) return null;
      batch = r.value;
    }
    const reasons = this.validator ? await this.validator(batch.rows.map((r) => r[0] ?? '')) : null;
    const typed = convert(batch, plan, this.counts, sink, reasons, null, builder);
    return this.encoders.map((encode) => encode(typed));
  }

  /** The rejected rows, as the loaders read them from a stage thread's rejects file. */
  async *rejects(): AsyncGenerator<RejectedRow> {
    for (const line of this.rejected) yield JSON.parse(line) as RejectedRow;
  }

  get finished(): boolean {
    return this.done;
  }

  end(): void {
    void this.batches?.return(undefined);
  }
}

/** A failure of the input, as the stage thread reports it (StageThreadError, by cause). */
async function stage<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof StageThreadError) throw err;
    throw new StageThreadError(err instanceof FatalReadError ? 'read' : 'other', messageOf(err));
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message || err.name : String(err);
}
