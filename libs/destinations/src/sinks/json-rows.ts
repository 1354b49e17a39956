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

/** Where row `r` of a payload starts in its bytes. */
export function jsonRowStart(p: JsonRowsPayload, r: number): number {
  return r === 0 ? 0 : p.ends[r - 1] + 1;
}

/** Row `r`'s JSON text as bytes (a view, no copy). */
export function jsonRowBytes(p: JsonRowsPayload, r: number): Buffer {
  return Buffer.from(p.bytes.buffer, p.bytes.byteOffset + jsonRowStart(p, r), p.ends[r] - jsonRowStart(p, r));
}

/** Row `r`'s JSON text. */
export function jsonRowText(p: JsonRowsPayload, r: number): string {
  return jsonRowBytes(p, r).toString('utf8');
}

/** Rows `from` to `to` (exclusive, at least one), comma-separated as they are stored: a view, no copy. */
export function jsonRowRun(p: JsonRowsPayload, from: number, to: number): Buffer {
  const start = jsonRowStart(p, from);
  return Buffer.from(p.bytes.buffer, p.bytes.byteOffset + start, p.ends[to - 1] - start);
}
