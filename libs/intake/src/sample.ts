import { Readable } from 'node:stream';
import type { Request } from 'express';
import { ValidationError, readMultipart } from '@tapyard/core';
import { UploadErrorCode } from './upload-errors';

export interface UploadedSample {
  filename: string;
  fields: Map<string, string>;
  /** The first `maxBytes` of the file: enough for inference, bounded whatever the file size. */
  head: Buffer;
  truncated: boolean;
}

/** Reads the multipart fields and the head of the `file` part; the rest of the file is discarded. */
export async function readUploadedSample(req: Request, maxBytes: number): Promise<UploadedSample> {
  const fields = new Map<string, string>();
  let filename: string | null = null;
  const chunks: Buffer[] = [];
  let kept = 0;
  let truncated = false;
  await readMultipart(req, {
    notMultipart: "send multipart/form-data with a 'file' part",
    limits: { files: 1, fields: 20, fieldSize: 64 * 1024 },
    onField: (name, value) => fields.set(name, value),
    onFile: ({ field, filename: name, stream: file }) => {
      if (field !== 'file' || filename !== null) return void file.resume();
      filename = name || 'upload';
      file.on('data', (d: Buffer) => {
        if (kept >= maxBytes) {
          truncated = true;
          return;
        }
        const part = d.subarray(0, maxBytes - kept);
        chunks.push(part);
        kept += part.length;
        if (part.length < d.length) truncated = true;
      });
    },
  });
  if (filename === null)
    throw new ValidationError("multipart field 'file' is required").coded(UploadErrorCode.MissingField);
  if (kept === 0)
    throw new ValidationError(`the uploaded file '${filename}' is empty`).coded(UploadErrorCode.Empty);
  return { filename, fields, head: Buffer.concat(chunks), truncated };
}

export function bufferStream(b: Buffer): Readable {
  return Readable.from([b]);
}

/** Parses an optional boolean form field ("true"/"false"), naming it when invalid. */
export function boolField(fields: Map<string, string>, name: string): boolean | undefined {
  const v = fields.get(name)?.trim().toLowerCase();
  if (v === undefined || v === '') return undefined;
  if (v === 'true' || v === '1') return true;
  if (v === 'false' || v === '0') return false;
  throw new ValidationError(`field '${name}' must be true or false`).coded(UploadErrorCode.InvalidField);
}

export function intField(
  fields: Map<string, string>,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const v = fields.get(name)?.trim();
  if (v === undefined || v === '') return fallback;
  if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) {
    throw new ValidationError(`field '${name}' must be an integer between ${min} and ${max}`).coded(
      UploadErrorCode.InvalidField,
    );
  }
  return Number(v);
}
