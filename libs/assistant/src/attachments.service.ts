import { Inject, Injectable } from '@nestjs/common';
import { createHash, randomUUID } from 'node:crypto';
import { PassThrough, Readable } from 'node:stream';
import type { Request } from 'express';
import {
  CONFIG,
  NotFoundError,
  PayloadTooLargeError,
  TapyardConfig,
  UnsupportedMediaTypeError,
  ValidationError,
  readMultipart,
} from '@tapyard/core';
import { ObjectNotFoundError, ObjectStore } from '@tapyard/objectstore';

export interface Attachment {
  attachmentId: string;
  filename: string;
  size: number;
  contentType: string;
}

interface Stored extends Attachment {
  createdAt: string;
}

interface Incoming {
  filename: string;
  contentType: string;
  upload: Promise<void>;
  size: () => number;
  tooLarge: () => boolean;
  bad: () => string | null;
}

/** Attachments expire this long after upload (README "Assistant"). */
export const ATTACHMENT_TTL_MS = 24 * 60 * 60 * 1000;
/** One attachment at most, in bytes. */
export const ATTACHMENT_LIMIT = 25 * 1024 * 1024;

/** The file types the assistant's tools read: extension → content type. */
const TYPES: Record<string, string> = {
  csv: 'text/csv',
  tsv: 'text/tab-separated-values',
  txt: 'text/plain',
  md: 'text/markdown',
  json: 'application/json',
  ndjson: 'application/x-ndjson',
  jsonl: 'application/x-ndjson',
  xml: 'application/xml',
  pdf: 'application/pdf',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  html: 'text/html',
};

/**
 * Files staged for the assistant, per caller: stored in the environment's `assistant` bucket under
 * a digest of the caller's identity, so one identity can never name another's; typed by extension
 * and checked against their first bytes; expired after ATTACHMENT_TTL_MS.
 */
@Injectable()
export class AttachmentsService {
  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    private readonly store: ObjectStore,
  ) {}

  async stage(env: string, owner: string, req: Request): Promise<Attachment> {
    if (!(req.headers['content-type'] ?? '').toLowerCase().startsWith('multipart/form-data')) {
      throw new UnsupportedMediaTypeError("send multipart/form-data with a 'file' part");
    }
    const bucket = await this.store.bucket(env, 'assistant');
    await this.sweep(bucket, owner);
    const id = randomUUID();
    const key = `${prefix(owner)}${id}`;
    let found = null as Incoming | null;
    try {
      await readMultipart(req, {
        notMultipart: "send multipart/form-data with a 'file' part",
        limits: { files: 1, fields: 5, fileSize: ATTACHMENT_LIMIT },
        onFile: ({ field, filename: name, stream: file }) => {
          if (field !== 'file' || found) return void file.resume();
          const filename = (name || 'attachment').replace(/[\r\n\t/\\]/g, ' ').slice(0, 255);
          const ext = /\.([a-z0-9]+)$/i.exec(filename)?.[1]?.toLowerCase() ?? '';
          const contentType = TYPES[ext];
          if (!contentType) {
            file.resume();
            found = {
              filename,
              contentType: '',
              upload: Promise.resolve(),
              size: () => 0,
              tooLarge: () => false,
              bad: () => `'${filename}' is not a type the assistant reads (${Object.keys(TYPES).join(', ')})`,
            };
            return;
          }
          let size = 0;
          let tooLarge = false;
          let bad: string | null = null;
          const body = new PassThrough();
          file.on('limit', () => (tooLarge = true));
          file.on('data', (c: Buffer) => {
            if (size === 0) bad = contentMismatch(ext, c);
            size += c.length;
          });
          // A part cut off mid-way fails the upload instead of leaving it waiting for an end.
          file.once('error', (err: Error) => body.destroy(err));
          file.pipe(body);
          const upload = this.store.put(bucket, key, body, contentType);
          upload.catch(() => undefined);
          found = {
            filename,
            contentType,
            upload,
            size: () => size,
            tooLarge: () => tooLarge,
            bad: () => bad,
          };
        },
      });
    } catch (err) {
      const partial = found as Incoming | null;
      if (partial?.contentType) {
        await partial.upload.catch(() => undefined);
        await this.store.remove(bucket, key).catch(() => undefined);
      }
      throw err;
    }
    const got = found;
    if (!got) throw new ValidationError("multipart field 'file' is required");
    await got.upload;
    const problem = got.tooLarge()
      ? new PayloadTooLargeError(`the attachment is larger than ${ATTACHMENT_LIMIT} bytes`)
      : got.bad()
        ? new UnsupportedMediaTypeError(got.bad() as string)
        : got.size() === 0
          ? new ValidationError(`the attachment '${got.filename}' is empty`)
          : null;
    if (problem) {
      if (got.contentType) await this.store.remove(bucket, key).catch(() => undefined);
      throw problem;
    }
    const meta: Stored = {
      attachmentId: id,
      filename: got.filename,
      size: got.size(),
      contentType: got.contentType,
      createdAt: new Date().toISOString(),
    };
    await this.store.put(bucket, `${key}.json`, Buffer.from(JSON.stringify(meta)), 'application/json');
    return { attachmentId: id, filename: meta.filename, size: meta.size, contentType: meta.contentType };
  }

  /** The caller's own attachment, or 404 (another identity's, unknown, or expired). */
  async find(env: string, owner: string, attachmentId: string): Promise<Attachment> {
    if (!/^[0-9a-f-]{36}$/.test(attachmentId))
      throw new NotFoundError(`attachment '${attachmentId.slice(0, 40)}' does not exist`);
    const bucket = await this.store.bucket(env, 'assistant');
    let meta: Stored;
    try {
      meta = JSON.parse(
        await this.store.readText(bucket, `${prefix(owner)}${attachmentId}.json`, 64 * 1024),
      ) as Stored;
    } catch (err) {
      if (err instanceof ObjectNotFoundError)
        throw new NotFoundError(`attachment '${attachmentId}' does not exist`);
      throw err;
    }
    if (Date.now() - Date.parse(meta.createdAt) > ATTACHMENT_TTL_MS) {
      await this.remove(bucket, owner, attachmentId);
      throw new NotFoundError(`attachment '${attachmentId}' has expired`);
    }
    return { attachmentId, filename: meta.filename, size: meta.size, contentType: meta.contentType };
  }

  async open(env: string, owner: string, attachmentId: string): Promise<Readable> {
    await this.find(env, owner, attachmentId);
    return this.store.get(await this.store.bucket(env, 'assistant'), `${prefix(owner)}${attachmentId}`);
  }

  /** The first `maxBytes` of the attachment (for inference), and whether there was more. */
  async head(
    env: string,
    owner: string,
    attachmentId: string,
    maxBytes: number,
  ): Promise<{ head: Buffer; truncated: boolean }> {
    const stream = await this.open(env, owner, attachmentId);
    const chunks: Buffer[] = [];
    let kept = 0;
    let truncated = false;
    for await (const c of stream) {
      const b = c as Buffer;
      const part = b.subarray(0, maxBytes - kept);
      chunks.push(part);
      kept += part.length;
      if (part.length < b.length) {
        truncated = true;
        stream.destroy();
        break;
      }
    }
    return { head: Buffer.concat(chunks), truncated };
  }

  /** Deletes the owner's expired attachments. */
  private async sweep(bucket: string, owner: string): Promise<void> {
    for (const o of await this.store.list(bucket, prefix(owner))) {
      if (!o.key.endsWith('.json')) continue;
      const id = o.key.slice(prefix(owner).length, -'.json'.length);
      try {
        const meta = JSON.parse(await this.store.readText(bucket, o.key, 64 * 1024)) as Stored;
        if (Date.now() - Date.parse(meta.createdAt) > ATTACHMENT_TTL_MS) await this.remove(bucket, owner, id);
      } catch {
        // unreadable metadata: left for the next sweep
      }
    }
  }

  private async remove(bucket: string, owner: string, id: string): Promise<void> {
    await this.store.remove(bucket, `${prefix(owner)}${id}`).catch(() => undefined);
    await this.store.remove(bucket, `${prefix(owner)}${id}.json`).catch(() => undefined);
  }
}

/** Objects of one identity: a digest, so names with any characters map to a safe, unguessable prefix. */
function prefix(owner: string): string {
  return `attachments/${createHash('sha256').update(owner).digest('hex').slice(0, 32)}/`;
}

/** Why the first bytes do not fit the extension, or null. */
function contentMismatch(ext: string, first: Buffer): string | null {
  if (ext === 'pdf')
    return first.subarray(0, 5).toString('latin1') === '%PDF-'
      ? null
      : 'the .pdf file does not start like a PDF';
  if (ext === 'docx')
    return first[0] === 0x50 && first[1] === 0x4b ? null : 'the .docx file is not a ZIP container';
  // Text types: no NUL bytes in the first chunk, and valid UTF-8 (a cut multi-byte character at the end is fine).
  if (first.subarray(0, 4096).includes(0)) return `the .${ext} file has binary content`;
  const text = first.subarray(0, Math.max(0, Math.min(first.length, 65536) - 4)).toString('utf8');
  return text.includes('\uFFFD') ? `the .${ext} file is not UTF-8 text` : null;
}
