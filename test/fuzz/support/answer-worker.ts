/**
 * Reads one CodeGen script answer in a worker thread, as the stage thread does: the bytes of the
 * record channel through the sandbox's RecordParser, then the first record through readAnswer. In a
 * thread with a heap limit, so the fuzz suite sees an answer that never ends or eats the heap as a
 * failed property instead of hanging or dying with it.
 */
import { parentPort } from 'node:worker_threads';
import { RecordParser, RecordStreamError } from '../../../libs/sandbox/src/record-parser';
import { ScriptFailure, readAnswer } from '../../../libs/scripts/src/script-answer';
import type { AnswerJob, AnswerResult } from './answer-pool';

function read(job: AnswerJob): AnswerResult {
  const parser = new RecordParser(job.maxRecordBytes);
  const records: unknown[] = [];
  const bytes = Buffer.from(job.channel.buffer, job.channel.byteOffset, job.channel.byteLength);
  try {
    for (let i = 0; i < bytes.length && records.length === 0; i += job.chunk)
      records.push(...parser.push(bytes.subarray(i, i + job.chunk)));
  } catch (err) {
    if (err instanceof RecordStreamError) return { outcome: 'channel', message: err.message };
    throw err;
  }
  if (records.length === 0) return { outcome: 'none', message: 'no complete record' };
  try {
    const { batch, rejects } = readAnswer(job.kind, job.outputColumns, job.batch, records[0]);
    return { outcome: 'ok', batch, rejects };
  } catch (err) {
    if (err instanceof ScriptFailure) return { outcome: 'failure', message: err.message };
    throw err;
  }
}

parentPort?.on('message', (job: AnswerJob & { id: number }) => {
  let result: AnswerResult;
  try {
    result = read(job);
  } catch (err) {
    const e = err instanceof Error ? err : new Error(String(err));
    result = { outcome: 'bug', message: `${e.name}: ${e.message}\n${e.stack ?? ''}` };
  }
  parentPort?.postMessage({ id: job.id, result });
});
