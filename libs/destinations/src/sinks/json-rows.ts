import { SchemaField, TypedBatch } from '@tapyard/model';
import { rowJsonWriter } from '../encoders/json-rows';
import { JsonRowsPayload, Payload } from '../destination';

const writers = new WeakMap<SchemaField[], (batch: TypedBatch, row: number) => string>();

/** One row as a JSON object text (as the json-rows encoder writes it), for sinks that take typed batches. */
export function jsonRow(batch: TypedBatch, row: number): string {
  let write = writers.get(batch.columns);
  if (write === undefined) {
    write = rowJsonWriter(batch.columns);
    writers.set(batch.columns, write);
  }
  return write(batch, row);
}

/** A payload from the json-rows encoder (what the Kafka and REST sinks receive). */
export function jsonRows(p: Payload): JsonRowsPayload {
  if (typeof p === 'object' && p !== null && 'kind' in p && p.kind === 'json-rows') return p;
  throw new Error('this sink takes JSON rows from its encoder');
}
