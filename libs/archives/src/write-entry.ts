import { createWriteStream } from 'fs';
import { Readable, Transform, TransformCallback } from 'stream';
import { pipeline as pump } from 'stream/promises';
import * as zlib from 'zlib';
import { Extraction, quote, toError } from './extraction';
import { RATIO_SLACK, size } from './limits';

// Writing one entry, with the limits enforced on the bytes actually seen.

export interface ZipChecks {
  compressedSize: number;
  crc32: number;
}

export async function writeEntry(
  x: Extraction,
  name: string,
  source: Readable | AsyncIterable<unknown>,
  zip?: ZipChecks,
): Promise<void> {
  const { target, handle } = await x.createTarget();
  let bytes = 0;
  let crc = 0;
  const meter = new Tap(
    (chunk) => {
      bytes += chunk.length;
      x.totalBytes += chunk.length;
      checkEntryBytes(x, name, bytes);
      checkTotalBytes(x, name);
      if (zip) checkZipRatio(x, name, bytes, zip.compressedSize);
      if (zip) crc = zlib.crc32(chunk, crc);
    },
    () => {
      // yauzl checks sizes but not the CRC, which is the only guard against silently damaged data.
      if (zip && crc >>> 0 !== zip.crc32 >>> 0) throw x.corrupt('CRC mismatch');
    },
  );
  await pump(source, meter, createWriteStream(target, { fd: handle }));
  x.files.push({ name, path: target, bytes });
}

export function checkEntryBytes(x: Extraction, name: string, bytes: number): void {
  if (bytes > x.limits.maxEntryBytes) {
    throw x.refuse(`entry ${quote(name)} is larger than the limit of ${size(x.limits.maxEntryBytes)}`);
  }
}

function checkTotalBytes(x: Extraction, name: string): void {
  if (x.totalBytes > x.limits.maxTotalBytes) {
    throw x.refuse(
      `entry ${quote(name)} takes the extracted total past the limit of ${size(x.limits.maxTotalBytes)}`,
    );
  }
}

export function checkZipRatio(x: Extraction, name: string, bytes: number, compressedSize: number): void {
  if (bytes > x.limits.maxRatio * compressedSize + RATIO_SLACK) {
    throw x.refuse(`entry ${quote(name)} expands more than ${x.limits.maxRatio} times its compressed size`);
  }
}

/** Passes bytes through unchanged, letting checks see every chunk and the end, and fail the stream. */
export class Tap extends Transform {
  constructor(
    private readonly onChunk: (chunk: Buffer) => void,
    private readonly onEnd: () => void = () => undefined,
  ) {
    super();
  }

  override _transform(chunk: unknown, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (!Buffer.isBuffer(chunk)) return callback(new TypeError('expected a byte stream'));
    try {
      this.onChunk(chunk);
      callback(null, chunk);
    } catch (err) {
      callback(toError(err));
    }
  }

  override _flush(callback: TransformCallback): void {
    try {
      this.onEnd();
      callback();
    } catch (err) {
      callback(toError(err));
    }
  }
}
