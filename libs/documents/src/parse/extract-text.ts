import { spawn } from 'node:child_process';
import { open, stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { PARSER_DEFAULTS, ParserOptions } from '@tapyard/model';
import { nodeEntryArgs } from '@tapyard/core';
import { DocumentError } from '../document.errors';
import type { ExtractedText } from '../document.types';
import { detectFormat } from './detect-format';
import type { ParseReply, ParseRequest } from './parse-process';
import { parseDocument } from './parsers';
import { Unreadable } from './unreadable';

export interface ParseLimits {
  maxBytes: number;
  timeoutMs: number;
  /** Old-generation heap of the parse process. */
  heapMb: number;
  /**
   * Everything the parse process may allocate (RLIMIT_DATA: heap, buffers, native memory), so that
   * what the decompression bounds miss is still capped.
   */
  memoryBytes: number;
  /** Bytes the parts of a DOCX may inflate to together, and one PDF stream may decode to. */
  maxDecompressedBytes: number;
  /** How many times its compressed size one part may grow to. */
  maxRatio: number;
}

const MiB = 1024 * 1024;
/** Text and Markdown files up to this size are parsed in the calling process (see extractText). */
const IN_PROCESS_MAX_BYTES = MiB;
/** How V8 and native code die when an allocation fails under the cap. */
const CRASHES = new Set(['SIGSEGV', 'SIGABRT', 'SIGTRAP', 'SIGBUS']);

export const PARSE_LIMITS: ParseLimits = Object.freeze({
  maxBytes: 100 * MiB,
  timeoutMs: 60_000,
  heapMb: 512,
  memoryBytes: 1024 * MiB,
  maxDecompressedBytes: 256 * MiB,
  maxRatio: 200,
});

/**
 * The text of one document, parsed in a thread of its own with a heap cap and a deadline: a hostile
 * or broken file ends in a DocumentError naming the reason, never in a hung or crashed worker.
 */
export async function extractText(
  input: { path: string; filename: string },
  options: ParserOptions = {},
  given: Partial<ParseLimits> = {},
): Promise<ExtractedText> {
  const limits: ParseLimits = { ...PARSE_LIMITS, ...given };
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
    bounds: { maxBytes: limits.maxDecompressedBytes, maxRatio: limits.maxRatio },
  };
  // Small plain text and Markdown are decoded here: a process of their own would cost more than the
  // work. Larger ones go to the capped process with the formats that have a parser library: decoding
  // and normalising take some 19 times the file in memory and block for seconds past a few MB.
  const here = (format === 'text' || format === 'markdown') && size <= IN_PROCESS_MAX_BYTES;
  const reply = here ? await inProcess(request) : await runProcess(request, limits);
  if (!reply.ok) {
    throw new DocumentError(
      reply.unreadable ? reply.message : `'${name}' could not be parsed as ${format}: ${reply.message}`,
      reply.severity,
    );
  }
  return reply.result;
}

/**
 * Parses in a process of its own under RLIMIT_DATA (via util-linux `prlimit`), not a thread: a thread's
 * heap cap leaves out the ArrayBuffers and zlib memory a decompression bomb fills. Address space
 * (RLIMIT_AS) would not do, as Node reserves some 800 MB of it that it never uses.
 */
function runProcess(request: ParseRequest, limits: ParseLimits): Promise<ParseReply> {
  const entry = join(__dirname, `parse-process${extname(__filename)}`);
  const child = spawn(
    'prlimit',
    [
      `--data=${limits.memoryBytes}`,
      '--',
      process.execPath,
      `--max-old-space-size=${limits.heapMb}`,
      ...nodeEntryArgs(entry),
    ],
    {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'advanced',
      // Hostile files are parsed here: none of the platform's settings or secrets come along.
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        ...(process.env.TMPDIR ? { TMPDIR: process.env.TMPDIR } : {}),
      },
    },
  );
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (s: string) => (stderr = (stderr + s).slice(-4096)));
  const name = request.name;
  return new Promise((resolve, reject) => {
    // The first outcome wins, and is reported once the process is gone: whatever the parse allocated
    // has been returned by then.
    let outcome: (() => void) | null = null;
    const decide = (f: () => void): void => {
      if (outcome) return;
      outcome = f;
      clearTimeout(timer);
      child.kill('SIGKILL');
    };
    const timer = setTimeout(
      () =>
        decide(() =>
          reject(new DocumentError(`'${name}' took longer than ${limits.timeoutMs / 1000} s to parse`)),
        ),
      limits.timeoutMs,
    );
    const outOfMemory = (signal: string | null = null): DocumentError =>
      new DocumentError(
        /JavaScript heap out of memory/.test(stderr)
          ? `'${name}' needs more than ${limits.heapMb} MB of heap to parse`
          : `'${name}' needs more than ${limits.memoryBytes / MiB} MB of memory to parse${signal ? ` (the parser stopped with ${signal})` : ''}`,
      );
    child.on('message', (m: ParseReply) =>
      decide(() => (!m.ok && /allocation failed/i.test(m.message) ? reject(outOfMemory()) : resolve(m))),
    );
    child.on('error', (err) => {
      decide(() => reject(new Error(`the document parser could not start: ${err.message}`)));
      // A process that never started closes nothing.
      if (child.pid === undefined) outcome?.();
    });
    // 'close', not 'exit': by then stderr has been read to its end. Only this code sends SIGKILL, and
    // only once decided; a process that crashes under its memory cap has most likely hit it.
    child.on('close', (code, signal) => {
      decide(() =>
        reject(
          /out of memory|allocation failed/i.test(stderr) || (signal !== null && CRASHES.has(signal))
            ? outOfMemory(signal)
            : new DocumentError(`'${name}' stopped the parser (${signal ?? `exit ${code}`})`),
        ),
      );
      outcome?.();
    });
    child.send(request, (err: Error | null) => {
      if (err) decide(() => reject(new Error(`the document parser could not start: ${err.message}`)));
    });
  });
}

async function inProcess(request: ParseRequest): Promise<ParseReply> {
  try {
    return {
      ok: true,
      result: await parseDocument(
        request.path,
        request.name,
        request.format,
        request.options,
        request.bounds,
      ),
    };
  } catch (err) {
    if (!(err instanceof Unreadable)) throw err;
    return { ok: false, message: err.message, severity: err.severity, unreadable: true };
  }
}
