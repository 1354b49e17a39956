/**
 * The destinations' encoders as a job's stages use them: a batch cut to a destination's limit, and
 * the CSV form of an encoder for the fast path's clean chunks. Pure functions, shared by the stage
 * thread (thread-main.ts) and the main-thread run of a small whole input (local-stage.ts).
 */
import type {
  CsvChunkPayload,
  CsvEncoderFactory,
  EncoderFactory,
  JsonRowsPayload,
  Payload,
  TargetShape,
} from '@tapyard/destinations';
import type { PipelineDefinition, SchemaField, TypedBatch } from '@tapyard/model';

type EncoderModule = {
  createEncoder: EncoderFactory;
  createCsvEncoder?: CsvEncoderFactory;
  /** Takes back the memory of payloads its destination has sent (the copy-text module's binary pieces). */
  reuseMemory?: (buffers: ArrayBuffer[]) => void;
  /** Cuts a JsonRowsPayload (the json-rows encoder's module has it). */
  sliceRows?: (p: JsonRowsPayload, from: number, to: number) => JsonRowsPayload;
};

/** A destination's encoder, cutting batches to its limit first. */
export function encoderOf(
  module: string,
  maxBatchRows: number | null,
  columns: SchemaField[],
): (batch: TypedBatch) => Payload[] {
  // A path the main thread took from a registered plug-in, never from a job's input.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const encode = (require(module) as EncoderModule).createEncoder(columns);
  if (maxBatchRows === null) return (batch) => [encode(batch)];
  return (batch) => {
    const out: Payload[] = [];
    for (let from = 0; from < batch.lines.length; from += maxBatchRows) {
      const to = Math.min(from + maxBatchRows, batch.lines.length);
      out.push(
        encode({
          columns: batch.columns,
          values: batch.values.map((v) => v.slice(from, to)),
          lines: batch.lines.slice(from, to),
        }),
      );
    }
    return out;
  };
}

/**
 * The CSV form of a destination's encoder (null when its module has none, or none for this target:
 * the clean chunks then go out as they are), cutting its payloads to the destination's limit.
 * `shape`: what the destination's preparation read of the target.
 */
export function csvEncoderOf(
  module: string,
  maxBatchRows: number | null,
  columns: SchemaField[],
  fileColumns: string[],
  definition: PipelineDefinition,
  shape: TargetShape | null,
): ((chunk: CsvChunkPayload) => Iterable<Payload[]>) | null {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { createCsvEncoder: factory, sliceRows } = require(module) as EncoderModule;
  const encode = factory?.(columns, fileColumns, definition.source.fileAttributes.csvAttributes, shape);
  if (!encode) return null;
  return function* (chunk) {
    for (const p of encode(chunk)) {
      const cut = maxBatchRows !== null && sliceRows !== undefined;
      if (!cut || typeof p !== 'object' || !('kind' in p) || p.kind !== 'json-rows') {
        yield [p];
        continue;
      }
      const out: Payload[] = [];
      for (let from = 0; from < p.ends.length; from += maxBatchRows)
        out.push(sliceRows(p, from, Math.min(from + maxBatchRows, p.ends.length)));
      yield out;
    }
  };
}

/**
 * A part's payloads as the batches the thread posts: clean chunks through the CSV form of the encoder,
 * piece by piece; the chunks the validating path read are encoded already.
 */
export function* pieces(
  payloads: Payload[],
  csv: (chunk: CsvChunkPayload) => Iterable<Payload[]>,
): Generator<Payload[]> {
  for (const p of payloads) {
    if (typeof p === 'object' && 'kind' in p && p.kind === 'csv') yield* csv(p);
    else yield [p];
  }
}

/** Rows of the payloads written as PostgreSQL binary COPY (for the job's notes). */
export function binaryRows(payloads: Payload[]): number {
  let rows = 0;
  for (const p of payloads)
    if (typeof p === 'object' && 'kind' in p && p.kind === 'pg-binary') rows += p.rows;
  return rows;
}

/** Gives an encoder module the memory of payloads its destination has sent, when it takes it back. */
export function reuseEncoderMemory(module: string, buffers: ArrayBuffer[]): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  (require(module) as EncoderModule).reuseMemory?.(buffers);
}
