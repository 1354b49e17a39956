/**
 * Streaming JSON reader: JSON arrays of records, documents with the records array at `recordPath`,
 * single documents, and JSON Lines (see json/json-records.ts for the shapes and the error policy).
 * Every byte is checked against the JSON grammar as it streams (json/json-grammar.ts); each record's
 * text is cut out of the decoded chunks and only then JSON.parse'd, so memory is bounded by the
 * largest record, never by the file. The cell holds `JSON.stringify` of the parsed value, except
 * when the record has a number of 16 or more digits: then its text is kept as written, so big
 * integers and long decimals lose no precision. Records may be any JSON value; whether a
 * non-object is acceptable is for the loader to decide.
 */
import { ByteInput, ChunkDecoder, DEFAULT_MIN_CHUNK, rechunk } from './chunks';
import {
  BatchSink,
  DEFAULT_BATCH_BYTES,
  DEFAULT_BATCH_ROWS,
  DEFAULT_MAX_BYTES,
  positiveOption,
} from './batch-sink';
import { FatalReadError, RecordBatch } from './record-batch';
import { JsonRecordScanner } from './json/json-records';

export { JSON_SHAPE_ERROR } from './json/json-records';

export interface JsonReadOptions {
  /** Dot path to the array of records inside a JSON document, e.g. `data.items`; empty = top level. */
  recordPath?: string | null;
  /** JSON Lines from the first byte (a .jsonl or .ndjson file): one value per line, whatever it is. */
  lines?: boolean;
  /** Records (rows plus row errors) per yielded batch; default 5,000. */
  batchRows?: number;
  /** Records are also cut into a batch once they hold this many bytes; default 32 MiB. */
  batchBytes?: number;
  /** Largest record; default 16 MiB. A larger record is a row error. */
  maxRecordBytes?: number;
  /** Deepest nesting inside one record; default 64. Deeper is a row error. */
  maxDepth?: number;
  /** Input chunks smaller than this are coalesced first; default 64 KiB (tests use 1). */
  minChunkBytes?: number;
}

/** Reads JSON records from `input` and yields them in batches of up to `batchRows` records (fewer past `batchBytes`). */
export async function* readJson(input: ByteInput, opts: JsonReadOptions = {}): AsyncGenerator<RecordBatch> {
  const recordPath = (opts.recordPath ?? '').trim();
  const path = recordPath === '' ? [] : recordPath.split('.');
  if (path.some((p) => p === '')) {
    throw new FatalReadError(`recordPath '${recordPath}' is not a dot path like data.items`);
  }
  const sink = new BatchSink(
    positiveOption('batchRows', opts.batchRows, DEFAULT_BATCH_ROWS),
    undefined,
    positiveOption('batchBytes', opts.batchBytes, DEFAULT_BATCH_BYTES),
  );
  const scanner = new JsonRecordScanner({
    path,
    lines: opts.lines === true,
    maxBytes: positiveOption('maxRecordBytes', opts.maxRecordBytes, DEFAULT_MAX_BYTES),
    maxDepth: positiveOption('maxDepth', opts.maxDepth, 64),
    sink,
  });
  const decoder = new ChunkDecoder('utf-8');
  for await (const chunk of rechunk(
    input,
    positiveOption('minChunkBytes', opts.minChunkBytes, DEFAULT_MIN_CHUNK),
  )) {
    scanner.feed(decoder.decode(chunk));
    for (let b = sink.take(); b !== undefined; b = sink.take()) yield b;
  }
  const tail = decoder.end();
  if (tail.length > 0) scanner.feed(tail);
  scanner.finish();
  for (let b = sink.take(); b !== undefined; b = sink.take()) yield b;
}
