import type { SchemaField } from '../pipeline.types';
import type { Value } from './coerce';

/**
 * Rows of a job in its output schema, by column, every value already coerced to its column's type
 * (see coerce.ts): what the stage thread hands to each destination's encoder. Column arrays keep a
 * batch to a few large objects, however many rows it holds.
 */
export interface TypedBatch {
  columns: SchemaField[];
  /** values[column][row]. */
  values: Value[][];
  /** The source line of each row (1-based), for reports of rows a destination refuses. */
  lines: number[];
}

/** Rows in a batch. */
export function batchRows(batch: TypedBatch): number {
  return batch.lines.length;
}

/** One row as `{column: value}` (for messages, documents and reject reports). */
export function rowObject(batch: TypedBatch, row: number): Record<string, Value> {
  const out: Record<string, Value> = {};
  for (let c = 0; c < batch.columns.length; c++) out[batch.columns[c].name] = batch.values[c][row];
  return out;
}

/** A row as JSON text for a reject report: BigInts keep every digit as text. */
export function rowText(batch: TypedBatch, row: number): string {
  const text = JSON.stringify(rowObject(batch, row), (_k, v: unknown) =>
    typeof v === 'bigint' ? v.toString() : v,
  );
  return text.length > 1000 ? text.slice(0, 1000) : text;
}
