/**
 * Entry of a parse process: parses the one document it is sent and answers with its text, or why it
 * has none. The parent kills it once answered, which frees all it allocated, native memory included.
 */
import type { ParserOptions } from '@tapyard/model';
import type { DocumentFormat } from '../document.types';
import type { DecompressionBounds } from './decompression';
import { parseDocument } from './parsers';
import { Unreadable } from './unreadable';

export interface ParseRequest {
  path: string;
  name: string;
  format: DocumentFormat;
  options: Required<ParserOptions>;
  bounds: DecompressionBounds;
}

export type ParseReply =
  | { ok: true; result: Awaited<ReturnType<typeof parseDocument>> }
  | { ok: false; message: string; severity: 'error' | 'warning'; unreadable: boolean };

// Listening keeps the process alive after it answers, so that it ends only when the parent kills it.
process.on('message', (req: ParseRequest) => {
  parseDocument(req.path, req.name, req.format, req.options, req.bounds).then(
    (result) => process.send?.({ ok: true, result } satisfies ParseReply),
    (err: unknown) =>
      process.send?.({
        ok: false,
        message: err instanceof Error ? err.message : String(err),
        severity: err instanceof Unreadable ? err.severity : 'error',
        unreadable: err instanceof Unreadable,
      } satisfies ParseReply),
  );
});
