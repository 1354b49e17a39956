import { Transform } from 'node:stream';
import { pipeline as pipeline_ } from 'node:stream/promises';
import type { Request } from 'express';
import {
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
  ValidationError,
  readMultipart,
} from '@tapyard/core';
import { PipelineErrorCode } from '@tapyard/model';
import { SNIFF_BYTES, sniffContent } from '@tapyard/profiling';
import { archiveKind } from '@tapyard/archives';
import { StagedWriter } from './staged-writer';
import { Staging } from './staging';
import { UploadErrorCode } from './upload-errors';

/** File names of compressed files; those archiveKind() does not name are formats Tapyard does not read. */
export const COMPRESSED = /\.(zip|gz|tgz|tar|jar|bz2|xz|7z)$/i;

/** What a multipart upload brought: its fields, and its file part as staged. */
export interface Received {
  fields: Map<string, string>;
  filename: string | null;
  bytes: number;
  tooLarge: boolean;
  compressed: boolean;
  /** The file's first bytes (up to SNIFF_BYTES): what it is, whatever its name. */
  head: Buffer;
  /** The file part's staged input (its id is the pipeline token), once the part started. */
  staged: StagedWriter | null;
  /** The whole file, when it was received in memory (`whole`) rather than staged. */
  body: Buffer | null;
  /** The fields sent before the file part. */
  before: Map<string, string>;
}

/**
 * Receives a multipart upload, its file part streamed into the staged input `token` as it arrives.
 * `fileStarts`: called once the file's head is in (its data already flowing into the object store),
 * with the fields sent before the file. `whole`: the request is small (its content-length says so,
 * and Node's parser holds the body to it): the file is received in memory instead, nothing is staged
 * and `fileStarts` is not called.
 */
export async function receiveUpload(
  staging: Staging,
  limitBytes: number,
  environment: string,
  req: Request,
  token: string,
  fileStarts: (got: Received, fields: Map<string, string>) => Promise<void>,
  whole = false,
): Promise<Received> {
  const got: Received = {
    fields: new Map(),
    filename: null,
    bytes: 0,
    tooLarge: false,
    compressed: false,
    head: Buffer.alloc(0),
    staged: null,
    body: null,
    before: new Map(),
  };
  const writes: Promise<void>[] = [];
  // Each is observed at once: one that fails while the body is still parsed must not be an
  // unhandled rejection; the failure is reported below, after the parse settles.
  const track = (p: Promise<void>) => {
    p.catch(() => undefined);
    writes.push(p);
  };
  // Created before the body flows so the file part is piped the moment it starts: no data may
  // flow unobserved.
  const staged = whole ? null : await staging.writer(environment, token);
  try {
    await readMultipart(req, {
      notMultipart: "upload with Content-Type multipart/form-data and a 'file' part",
      limits: { files: 1, fields: 20, fieldSize: 64 * 1024, fileSize: limitBytes },
      onField: (name, value) => got.fields.set(name, value),
      onFile: ({ field, filename, stream: file }) => {
        if (field !== 'file' || got.filename !== null) return void file.resume();
        got.filename = (filename || 'upload').replace(/[\r\n\t]/g, ' ').slice(0, 255);
        if (COMPRESSED.test(got.filename) && archiveKind(got.filename) === null) {
          got.compressed = true;
          return void file.resume();
        }
        file.on('limit', () => (got.tooLarge = true));
        got.before = new Map(got.fields);
        if (staged === null) {
          // Read by hand, not through stream.pipeline(): its end aborts an AbortController, whose
          // DOMException (a stack trace) cost about as much as the rest of receiving a small file.
          track(
            (async () => {
              const chunks: Buffer[] = [];
              for await (const chunk of file as AsyncIterable<Buffer>) chunks.push(chunk);
              got.body = Buffer.concat(chunks);
              got.bytes = got.body.length;
              got.head = Buffer.from(got.body.subarray(0, SNIFF_BYTES));
            })(),
          );
          return;
        }
        const head = new HeadCollector();
        got.staged = staged;
        const fieldsBefore = got.before;
        track(
          pipeline_(file, head.tap(), staged).then(() => {
            got.bytes = staged.bytes;
          }),
        );
        // A streaming job starts once the head shows a data file (or the file ended shorter).
        track(
          head.seen.then(() => {
            got.head = head.bytes();
            return fileStarts(got, fieldsBefore);
          }),
        );
      },
    });
    await Promise.all(writes);
  } catch (err) {
    // A broken or aborted upload leaves nothing behind. The writer is discarded first: a file
    // part cut off mid-way never ends it.
    if (staged === null) {
      await Promise.allSettled(writes);
      throw err;
    }
    await staged.discard();
    await Promise.allSettled(writes);
    await staging.remove(environment, token).catch(() => undefined);
    throw err;
  }
  if (got.staged === null) staged?.destroy();
  return got;
}

/** What only the whole file tells: within the upload limit, and not empty. */
export function checkReceived(got: Received, limitBytes: number): void {
  if (got.tooLarge)
    throw new PayloadTooLargeError(
      `the file is larger than the upload limit (UPLOAD_LIMIT, ${limitBytes} bytes)`,
    ).coded(UploadErrorCode.TooLarge);
  if (got.bytes === 0)
    throw new ValidationError(`the uploaded file '${got.filename}' is empty`).coded(UploadErrorCode.Empty);
}

export /** 415 naming what the file is when its content is not a data file (the pipeline reads CSV, JSON or XML). */
function assertDataFile(filename: string, head: Buffer, pipeline: string): void {
  const sniffed = sniffContent(head);
  if (sniffed.kind === 'binary') {
    throw new UnsupportedMediaTypeError(
      `'${filename}' is ${sniffed.type}; pipeline '${pipeline}' reads CSV, JSON or XML data files ` +
        '(documents go to a document pipeline)',
    ).coded(PipelineErrorCode.UnsupportedFile);
  }
}

export /** Keeps the first SNIFF_BYTES of a stream that passes through it unchanged. */
class HeadCollector {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  private reached!: () => void;
  /** Settles once SNIFF_BYTES went through, or the stream ended or failed before. */
  readonly seen = new Promise<void>((resolve) => (this.reached = resolve));

  tap(): Transform {
    const through = new Transform({
      transform: (chunk: Buffer, _encoding, done) => {
        if (this.kept < SNIFF_BYTES) {
          const part = chunk.subarray(0, SNIFF_BYTES - this.kept);
          this.chunks.push(part);
          this.kept += part.length;
          if (this.kept >= SNIFF_BYTES) this.reached();
        }
        done(null, chunk);
      },
      flush: (done) => {
        this.reached();
        done();
      },
    });
    for (const end of ['close', 'error']) through.once(end, () => this.reached());
    return through;
  }

  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

export function publisherTokenOf(fields: Map<string, string>): string | null {
  return fields.get('publishertoken')?.trim() || null;
}
