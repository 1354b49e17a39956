import { createReadStream } from 'fs';
import { Readable, pipeline } from 'stream';
import * as zlib from 'zlib';
import { Extraction, quote } from './extraction';
import { RATIO_SLACK } from './limits';
import { Tap } from './write-entry';

// The sequential formats (tar, tar.gz, gz) read the archive as one stream.

export interface Source {
  stream: Readable;
  /** Settles once every stage has closed (so the archive's file handle is released), with its error if any. */
  done: Promise<Error | null>;
}

/** The archive's bytes, gunzipped when `compressedSize` is given, with the whole-stream ratio enforced. */
export function openSource(x: Extraction, archivePath: string, compressedSize: number | null): Source {
  const limit = compressedSize === null ? Infinity : x.limits.maxRatio * compressedSize + RATIO_SLACK;
  let total = 0;
  const tap = new Tap((chunk) => {
    total += chunk.length;
    if (total > limit) {
      throw x.refuse(`the archive expands more than ${x.limits.maxRatio} times its size${at(x)}`);
    }
  });
  const file = createReadStream(archivePath);
  const done = new Promise<Error | null>((resolve) => {
    const settle = (err: NodeJS.ErrnoException | null): void => resolve(err);
    if (compressedSize === null) pipeline(file, tap, settle);
    else pipeline(file, zlib.createGunzip(), tap, settle);
  });
  return { stream: tap, done };
}

function at(x: Extraction): string {
  return x.current === null ? '' : ` (at entry ${quote(x.current)})`;
}
