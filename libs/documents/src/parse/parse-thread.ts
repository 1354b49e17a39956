/** Entry of a parse thread: parses one document and posts the text, or why it has none. */
import { parentPort, workerData } from 'node:worker_threads';
import type { ParserOptions } from '@tapyard/pipelines';
import type { DocumentFormat } from '../document.types';
import { Unreadable, parseDocument } from './parsers';

export interface ParseRequest {
  path: string;
  name: string;
  format: DocumentFormat;
  options: Required<ParserOptions>;
}

export type ParseReply =
  | { ok: true; result: Awaited<ReturnType<typeof parseDocument>> }
  | { ok: false; message: string; severity: 'error' | 'warning'; unreadable: boolean };

const req = (workerData as { data: ParseRequest }).data;
parseDocument(req.path, req.name, req.format, req.options).then(
  (result) => parentPort?.postMessage({ ok: true, result } satisfies ParseReply),
  (err: unknown) =>
    parentPort?.postMessage({
      ok: false,
      message: err instanceof Error ? err.message : String(err),
      severity: err instanceof Unreadable ? err.severity : 'error',
      unreadable: err instanceof Unreadable,
    } satisfies ParseReply),
);
