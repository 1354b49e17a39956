/**
 * Runs one reader over one input in a worker thread, so the fuzz suites can stop a reader that
 * never returns (the bug class of issue 18) instead of hanging with it.
 */
import { Readable } from 'node:stream';
import { parentPort } from 'node:worker_threads';
import { readCsv } from '../../../libs/readers/src/csv-reader';
import { readJson } from '../../../libs/readers/src/json-reader';
import { readXml } from '../../../libs/readers/src/xml-reader';
import { readTapRecords } from '../../../libs/readers/src/tap-records';
import type { RecordBatch } from '../../../libs/readers/src/record-batch';
import type { ReaderJob, ReaderResult } from './reader-pool';

function chunked(data: Uint8Array, size: number): Readable {
  const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const chunks: Buffer[] = [];
  for (let i = 0; i < buf.length; i += size) chunks.push(buf.subarray(i, i + size));
  return Readable.from(chunks);
}

function open(job: ReaderJob): AsyncGenerator<RecordBatch> {
  const input = chunked(job.data, job.chunk);
  switch (job.reader) {
    case 'csv':
      return readCsv(input, {
        delimiter: ',',
        header: false,
        quote: '"',
        escape: '"',
        encoding: 'utf-8',
        minChunkBytes: 1,
        ...job.opts,
      });
    case 'json':
      return readJson(input, { minChunkBytes: 1, ...job.opts });
    case 'xml':
      return readXml(input, { rowElement: 'row', minChunkBytes: 1, ...job.opts });
    case 'tap':
      return readTapRecords(input, { keys: job.keys ?? [], columns: job.keys ?? [] });
  }
}

parentPort?.on('message', (job: ReaderJob & { id: number }) => {
  void (async () => {
    const result: ReaderResult = { rows: [], lines: [], errors: [], header: null, fatal: null };
    try {
      for await (const b of open(job)) {
        if (b.header && result.header === null) result.header = b.header;
        result.rows.push(...b.rows);
        result.lines.push(...b.lines);
        result.errors.push(...b.errors);
      }
    } catch (err) {
      const e = err as Error;
      result.fatal = { name: e.name, message: e.message };
    }
    parentPort?.postMessage({ id: job.id, result });
  })();
});
