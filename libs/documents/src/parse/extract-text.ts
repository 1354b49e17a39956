import { open, stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { PARSER_DEFAULTS, ParserOptions } from '@tapyard/pipelines';
import { spawnWorker } from '@tapyard/ingestion';
import { DocumentError } from '../document.errors';
import type { ExtractedText } from '../document.types';
import { detectFormat } from './detect-format';
import type { ParseReply, ParseRequest } from './parse-thread';
import { Unreadable, parseDocument } from './parsers';

export interface ParseLimits {
  maxBytes: number;
  timeoutMs: number;
  /** Old-generation heap of the parse thread. */
  heapMb: number;
}

export const PARSE_LIMITS: ParseLimits = { maxBytes: 100 * 1024 * 1024, timeoutMs: 60_000, heapMb: 512 };

/**
 * The text of one document, parsed in a thread of its own with a heap cap and a deadline: a hostile
 * or broken file ends in a DocumentError naming the reason, never in a hung or crashed worker.
 */
export async function extractText(
  input: { path: string; filename: string },
  options: ParserOptions = {},
  limits: ParseLimits = PARSE_LIMITS,
): Promise<ExtractedText> {
  const name = input.filename;
  const size = (await stat(input.path)).size;
  if (size > limits.maxBytes) {
    throw new DocumentError(
      `'${name}' is ${size} bytes, more than the ${limits.maxBytes} a document may have`,
    );
  }
  if (size === 0) throw new DocumentError(`'${name}' is empty`, 'warning');
  const head = Buffer.alloc(1024);
  const fh = await open(input.path, 'r');
  try {
    await fh.read(head, 0, head.length, 0);
  } finally {
    await fh.close();
  }
  const format = detectFormat(head, name);
  if (format === 'zip')
    throw new DocumentError(`'${name}' is a ZIP archive, not a document (upload archives as .zip)`);
  const request: ParseRequest = {
    path: input.path,
    name,
    format,
    options: { ...PARSER_DEFAULTS, ...options },
  };
  // Plain text and Markdown are decoded in one linear pass within the size limit: a thread of their
  // own would cost more than the work. Formats with a parser library get one.
  const reply =
    format === 'text' || format === 'markdown' ? await inProcess(request) : await runThread(request, limits);
  if (!reply.ok) {
    throw new DocumentError(
      reply.unreadable ? reply.message : `'${name}' could not be parsed as ${format}: ${reply.message}`,
      reply.severity,
    );
  }
  return reply.result;
}

function runThread(request: ParseRequest, limits: ParseLimits): Promise<ParseReply> {
  const entry = join(__dirname, `parse-thread${extname(__filename)}`);
  const worker = spawnWorker(entry, {
    data: request,
    resourceLimits: { maxOldGenerationSizeMb: limits.heapMb },
  });
  return new Promise((resolve, reject) => {
    let settled = false;
    const done = (f: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate();
      f();
    };
    const timer = setTimeout(
      () =>
        done(() =>
          reject(
            new DocumentError(`'${request.name}' took longer than ${limits.timeoutMs / 1000} s to parse`),
          ),
        ),
      limits.timeoutMs,
    );
    worker.on('message', (m: ParseReply) => done(() => resolve(m)));
    worker.on('error', (err: Error & { code?: string }) =>
      done(() =>
        reject(
          new DocumentError(
            err.code === 'ERR_WORKER_OUT_OF_MEMORY'
              ? `'${request.name}' needs more than ${limits.heapMb} MB to parse`
              : `'${request.name}' could not be parsed: ${err.message}`,
          ),
        ),
      ),
    );
    worker.on('exit', (code) =>
      done(() => reject(new DocumentError(`'${request.name}' stopped the parser (exit ${code})`))),
    );
  });
}

async function inProcess(request: ParseRequest): Promise<ParseReply> {
  try {
    return {
      ok: true,
      result: await parseDocument(request.path, request.name, request.format, request.options),
    };
  } catch (err) {
    if (!(err instanceof Unreadable)) throw err;
    return { ok: false, message: err.message, severity: err.severity, unreadable: true };
  }
}
