import { once } from 'node:events';
import { PoolClient, QueryResult } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { ServiceUnavailableError, quoteIdent } from '@tapyard/core';
import { escapeCopyText } from './copy-text';
import { BINARY_HEADER, BINARY_TRAILER } from './copy-binary';
import { CsvChunkPayload, Payload, PgBinaryPayload, RejectedRow } from '../destination';
import { DestinationErrorCode } from '../destination-errors';

/**
 * Loads the payloads in order, one COPY per run of payloads of one kind: COPY text from the encoder,
 * clean CSV chunks of the file as they are (one COPY per line ending and column list, which
 * PostgreSQL fixes per COPY), or binary COPY written from them. Returns the rows loaded.
 */
export async function copyPayloads(
  client: PoolClient,
  table: string,
  columns: string[],
  payloads: AsyncIterable<Payload>,
  progress: (rows: number) => void,
): Promise<number> {
  const textColumns = columns.map(quoteIdent).join(', ');
  const it = payloads[Symbol.asyncIterator]();
  let next = await it.next();
  let total = 0;
  while (!next.done) {
    const first = next.value;
    const key = copyKey(first);
    const sql = copySql(table, textColumns, first);
    const binary = binaryOf(first);
    if (binary !== null) await holdTypes(client, table, binary);
    const run = async function* (): AsyncGenerator<CopyData> {
      if (binary !== null) yield { data: BINARY_HEADER, rows: 0 };
      while (!next.done && copyKey(next.value) === key) {
        yield copyData(next.value);
        next = await it.next();
      }
      if (binary !== null) yield { data: BINARY_TRAILER, rows: 0 };
    };
    const before = total;
    total += await copyChunks(client, sql, run(), (rows) => progress(before + rows));
  }
  return total;
}

/** The COPY statement of a run of payloads like `first` (`textColumns`: the target's, quoted). */
export function copySql(table: string, textColumns: string, first: Payload): string {
  if (typeof first === 'string') return `COPY ${table} (${textColumns}) FROM STDIN (FORMAT text)`;
  const binary = binaryOf(first);
  if (binary !== null)
    return `COPY ${table} (${binary.columns.map(quoteIdent).join(', ')}) FROM STDIN (FORMAT binary)`;
  const chunk = csvChunk(first);
  return `COPY ${table} (${chunk.columns.map(quoteIdent).join(', ')}) FROM STDIN (${chunk.copyOptions})`;
}

/** A payload as the COPY data it sends. */
export function copyData(p: Payload): CopyData {
  if (typeof p === 'string') return { data: p, rows: countLines(p) };
  const binary = binaryOf(p);
  if (binary !== null) return { data: binary.bytes, rows: binary.rows, written: binary.written };
  const chunk = csvChunk(p);
  return { data: chunk.bytes, rows: chunk.rows, written: chunk.written };
}

/** Payloads that share one COPY statement have the same key. */
export function copyKey(p: Payload): string {
  if (typeof p === 'string') return 'text';
  const binary = binaryOf(p);
  if (binary !== null) return `binary:${binary.columns.join(',')}:${binary.types.join(',')}`;
  const c = csvChunk(p);
  return `csv:${c.eol ?? 'any'}:${c.copyOptions}:${c.columns.join(',')}`;
}

function csvChunk(p: Payload): CsvChunkPayload {
  if (typeof p === 'string' || p instanceof Uint8Array || !('kind' in p) || p.kind !== 'csv') {
    throw new Error('the PostgreSQL loader takes COPY text, clean CSV chunks or binary COPY');
  }
  return p;
}

/** The payload when it is binary COPY, else null. */
export function binaryOf(p: Payload): PgBinaryPayload | null {
  return typeof p === 'object' && !(p instanceof Uint8Array) && 'kind' in p && p.kind === 'pg-binary'
    ? p
    : null;
}

/**
 * Holds the column types binary COPY data was written for until the transaction ends: the table is
 * locked as COPY locks it (ROW EXCLUSIVE: other loads go on, ALTER TABLE waits), then its columns'
 * declared types are compared with the payload's. Binary values read as another type would load as
 * wrong values, not fail; a table altered since the job read its types fails the load, and its retry
 * reads them again.
 */
async function holdTypes(client: PoolClient, table: string, binary: PgBinaryPayload): Promise<void> {
  const results = (await client.query(
    `LOCK TABLE ${table} IN ROW EXCLUSIVE MODE;
     SELECT attname::text AS name, format_type(atttypid, atttypmod) AS type FROM pg_attribute
      WHERE attrelid = ${client.escapeLiteral(table)}::regclass AND attnum > 0 AND NOT attisdropped`,
  )) as unknown as QueryResult<{ name: string; type: string }>[];
  const declared = new Map(results[results.length - 1].rows.map((r) => [r.name, r.type]));
  const changed = binary.columns.filter((c, k) => declared.get(c) !== binary.types[k]);
  if (changed.length > 0) {
    throw new ServiceUnavailableError(
      'postgres',
      `the type of column ${changed.map((c) => `'${c}'`).join(', ')} of ${table} changed during the load; it is retried`,
    ).coded(DestinationErrorCode.Unavailable);
  }
}

export interface CopyData {
  data: string | Uint8Array;
  rows: number;
  /** Called once the connection's socket has sent `data` (see CsvChunkPayload.written). */
  written?: () => void;
}

/** The connection's socket, to see when it has sent what it was given (pg keeps it as `connection.stream`). */
function socketOf(client: PoolClient): { writableLength: number } | null {
  const stream = (client as { connection?: { stream?: { writableLength?: unknown } } }).connection?.stream;
  return typeof stream?.writableLength === 'number' ? (stream as { writableLength: number }) : null;
}

export /** Streams COPY data with backpressure; returns the number of rows COPY reports. */
async function copyChunks(
  client: PoolClient,
  sql: string,
  chunks: AsyncIterable<CopyData>,
  progress: (rows: number) => void,
): Promise<number> {
  const stream = client.query(copyFrom(sql));
  const failed = new Promise<never>((_, reject) => stream.once('error', reject));
  failed.catch(() => undefined);
  // A chunk's bytes are sent once neither the COPY stream (which holds them until the server is ready
  // for data) nor the socket (whose unfinished write refers to them) has anything left to write:
  // `write` returning, or even 'drain', says less.
  const socket = socketOf(client);
  const unsent: (() => void)[] = [];
  const settle = () => {
    if (socket === null || stream.writableLength > 0 || socket.writableLength > 0) return;
    for (const written of unsent.splice(0)) written();
  };
  let rows = 0;
  try {
    for await (const chunk of chunks) {
      if (!stream.write(chunk.data)) await Promise.race([once(stream, 'drain'), failed]);
      if (chunk.written) unsent.push(chunk.written);
      settle();
      rows += chunk.rows;
      progress(rows);
    }
  } catch (err) {
    // Abort the COPY (CopyFail) so the connection can roll back; otherwise it waits forever.
    stream.destroy(err instanceof Error ? err : new Error(String(err)));
    await Promise.race([once(stream, 'close'), failed]).catch(() => undefined);
    throw err;
  }
  stream.end();
  await Promise.race([once(stream, 'finish'), failed]);
  // The server answered the COPY: every byte of it was sent.
  for (const written of unsent.splice(0)) written();
  return Number(stream.rowCount ?? rows);
}

function countLines(chunk: string): number {
  let n = 0;
  for (let i = chunk.indexOf('\n'); i !== -1; i = chunk.indexOf('\n', i + 1)) n++;
  return n;
}
export async function* counted(texts: AsyncIterable<string>): AsyncIterable<CopyData> {
  for await (const data of texts) yield { data, rows: countLines(data) };
}
export async function* rejectLines(
  token: string,
  rejects: AsyncIterable<RejectedRow>,
): AsyncIterable<string> {
  let buf = '';
  for await (const r of rejects) {
    buf += `${escapeCopyText(token)}\t${r.line}\t${escapeCopyText(r.stage)}\t${escapeCopyText(r.reason)}\t${escapeCopyText(r.raw)}\n`;
    if (buf.length > 1 << 16) {
      yield buf;
      buf = '';
    }
  }
  if (buf) yield buf;
}

/**
 * COPYs the job's rejected rows; a job without any (the common case) sends no COPY at all, which
 * would cost two round trips for nothing. Returns the rows COPY took.
 */
export async function copyRejects(
  client: PoolClient,
  sql: string,
  lines: AsyncIterable<string>,
): Promise<number> {
  const it = lines[Symbol.asyncIterator]();
  const first = await it.next();
  if (first.done) return 0;
  const all = async function* (): AsyncIterable<string> {
    yield first.value;
    for (let next = await it.next(); !next.done; next = await it.next()) yield next.value;
  };
  return copyChunks(client, sql, counted(all()), () => undefined);
}
