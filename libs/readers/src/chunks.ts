/**
 * Byte-stream plumbing shared by the readers: re-chunking the input to a sane size, and decoding
 * chunks to text once (whole chunk at a time) while keeping exact track of invalid UTF-8.
 */
import { isAscii, isUtf8 } from 'node:buffer';
import type { Readable } from 'node:stream';

/** What the readers accept: a Node Readable (of Buffers) or any async iterable of bytes. */
export type ByteInput = Readable | AsyncIterable<Uint8Array | string>;

/** Input chunks smaller than this are coalesced (bounds the per-chunk overhead). */
export const DEFAULT_MIN_CHUNK = 64 * 1024;
/** Input chunks larger than this are split (bounds the rows produced per chunk). */
export const MAX_CHUNK = 1024 * 1024;

/**
 * Yields the input as Buffers of `min`..MAX_CHUNK bytes (the last may be shorter): small chunks
 * are concatenated, large ones are split without copying.
 */
export async function* rechunk(input: ByteInput, min = DEFAULT_MIN_CHUNK): AsyncGenerator<Buffer> {
  let pending: Buffer[] = [];
  let size = 0;
  for await (const raw of input as AsyncIterable<Uint8Array | string>) {
    const chunk =
      typeof raw === 'string'
        ? Buffer.from(raw, 'utf8')
        : Buffer.isBuffer(raw)
          ? raw
          : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
    if (chunk.length === 0) continue;
    if (size === 0 && chunk.length >= min) {
      yield* split(chunk);
      continue;
    }
    pending.push(chunk);
    size += chunk.length;
    if (size >= min) {
      const all = pending.length === 1 ? pending[0] : Buffer.concat(pending, size);
      pending = [];
      size = 0;
      yield* split(all);
    }
  }
  if (size > 0) yield* split(pending.length === 1 ? pending[0] : Buffer.concat(pending, size));
}

function* split(chunk: Buffer): Generator<Buffer> {
  if (chunk.length <= MAX_CHUNK) {
    yield chunk;
    return;
  }
  for (let off = 0; off < chunk.length; off += MAX_CHUNK) yield chunk.subarray(off, off + MAX_CHUNK);
}

/**
 * One decoded chunk: its bytes (ending on a character boundary) and the means to cut text out of
 * it by byte positions. The chunk is decoded once as latin1 (native, ~8 GB/s), which is exact for
 * ASCII; a field holding multi-byte characters is decoded as UTF-8 on its own (measured faster
 * than decoding the whole chunk as UTF-8 and mapping positions, even for Cyrillic-heavy text).
 */
export class DecodedChunk {
  private latin1Text: string | null = null;

  constructor(
    readonly bytes: Buffer,
    /** `invalid`: holds invalid UTF-8 (then multi-byte text decodes with U+FFFD). */
    readonly kind: 'ascii' | 'latin1' | 'utf8' | 'invalid',
    /** Ascending byte positions of invalid UTF-8 sequences. */
    readonly badPos: number[] = NONE,
    /** File byte offset of each invalid sequence, parallel to badPos. */
    readonly badOffsets: number[] = NONE,
    /** File byte offset of `bytes[0]` (after a dropped BOM), for error messages. */
    readonly offset = 0,
  ) {}

  get length(): number {
    return this.bytes.length;
  }

  /**
   * The text of bytes [s, e); `ascii` says the caller saw no byte >= 0x80 in it (always true for
   * latin1), so it can be cut out of the latin1 text.
   */
  field(s: number, e: number, ascii: boolean): string {
    return ascii ? this.latin1().substring(s, e) : this.bytes.toString('utf8', s, e);
  }

  /** The text of bytes [s, e) (each call decodes; for one-offs). */
  slice(s: number, e: number): string {
    if (this.kind === 'ascii' || this.kind === 'latin1') return this.latin1().substring(s, e);
    return this.bytes.toString('utf8', s, e);
  }

  /** The whole text; null when the chunk holds invalid UTF-8. */
  wholeText(): string | null {
    if (this.kind === 'invalid') return null;
    return this.kind === 'utf8' ? this.bytes.toString('utf8') : this.latin1();
  }

  private latin1(): string {
    this.latin1Text ??= this.bytes.toString('latin1');
    return this.latin1Text;
  }
}

const NONE: number[] = [];
const EMPTY = Buffer.alloc(0);

/**
 * Decodes a byte stream chunk by chunk. UTF-8: a character split across chunks is carried to the
 * next chunk; clean chunks (the normal case) are validated with one native isAscii/isUtf8 call
 * and decoded with one toString; only a chunk with invalid bytes takes the slow path that locates
 * them (file byte offsets are reported). In utf-8 mode a BOM at the start of the file is dropped.
 * latin1 never fails.
 */
export class ChunkDecoder {
  private pending: Buffer | null = null;
  /** File offset of the first byte not yet decoded (the first pending byte, if any). */
  private offset = 0;
  private atStart = true;

  constructor(private readonly encoding: 'utf-8' | 'latin1') {}

  decode(chunk: Buffer): DecodedChunk {
    if (this.encoding === 'latin1') {
      this.offset += chunk.length;
      return new DecodedChunk(chunk, 'latin1', NONE, NONE, this.offset - chunk.length);
    }
    let buf = chunk;
    if (this.pending !== null) {
      buf = Buffer.concat([this.pending, chunk]);
      this.pending = null;
    }
    if (this.atStart) {
      if (buf.length < 3 && buf[0] === 0xef && (buf.length < 2 || buf[1] === 0xbb)) {
        // Maybe a BOM still arriving: wait for more bytes.
        this.pending = Buffer.from(buf);
        return new DecodedChunk(EMPTY, 'ascii', NONE, NONE, this.offset);
      }
      this.atStart = false;
      if (buf.length >= 3 && buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf) {
        buf = buf.subarray(3);
        this.offset += 3;
      }
    }
    const tail = incompleteTail(buf);
    const end = buf.length - tail;
    if (tail > 0) this.pending = Buffer.from(buf.subarray(end));
    const base = this.offset;
    this.offset += end;
    const body = tail > 0 ? buf.subarray(0, end) : buf;
    if (isAscii(body)) return new DecodedChunk(body, 'ascii', NONE, NONE, base);
    if (isUtf8(body)) return new DecodedChunk(body, 'utf8', NONE, NONE, base);
    const badPos: number[] = [];
    const badOffsets: number[] = [];
    findInvalid(body, base, badPos, badOffsets);
    return new DecodedChunk(body, 'invalid', badPos, badOffsets, base);
  }

  /** At end of input: a character left incomplete is one invalid sequence. */
  end(): DecodedChunk {
    const pending = this.pending;
    if (pending === null) return new DecodedChunk(EMPTY, 'ascii', NONE, NONE, this.offset);
    this.pending = null;
    this.atStart = false;
    return new DecodedChunk(pending, 'invalid', [0], [this.offset], this.offset);
  }
}

/** Number of bytes at the end of `buf` that start a multi-byte character not yet complete. */
function incompleteTail(buf: Buffer): number {
  const n = buf.length;
  for (let j = n - 1; j >= 0 && j >= n - 3; j--) {
    const b = buf[j];
    if (b < 0x80) return 0;
    if (b >= 0xc0) {
      const len = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : 2;
      return len > n - j ? n - j : 0;
    }
  }
  return 0;
}

/**
 * Length of the valid UTF-8 sequence at `i`, or minus the length of the invalid one (the maximal
 * subpart, as the WHATWG decoder replaces it).
 */
function sequenceAt(buf: Buffer, i: number, end: number): number {
  const b = buf[i];
  let need: number;
  let lo = 0x80;
  let hi = 0xbf;
  if (b >= 0xc2 && b <= 0xdf) need = 1;
  else if (b === 0xe0) {
    need = 2;
    lo = 0xa0;
  } else if (b === 0xed) {
    need = 2;
    hi = 0x9f;
  } else if (b >= 0xe1 && b <= 0xef) need = 2;
  else if (b === 0xf0) {
    need = 3;
    lo = 0x90;
  } else if (b === 0xf4) {
    need = 3;
    hi = 0x8f;
  } else if (b >= 0xf1 && b <= 0xf3) need = 3;
  else return -1;
  if (i + 1 >= end) return -1;
  const b1 = buf[i + 1];
  if (b1 < lo || b1 > hi) return -1;
  for (let k = 2; k <= need; k++) {
    if (i + k >= end || (buf[i + k] & 0xc0) !== 0x80) return -k;
  }
  return need + 1;
}

/** Slow path for a chunk with invalid UTF-8: notes the position of each invalid sequence. */
function findInvalid(body: Buffer, base: number, badPos: number[], badOffsets: number[]): void {
  const end = body.length;
  let i = 0;
  while (i < end) {
    if (body[i] < 0x80) {
      i++;
      continue;
    }
    const len = sequenceAt(body, i, end);
    if (len > 0) {
      i += len;
      continue;
    }
    badPos.push(i);
    badOffsets.push(base + i);
    i -= len;
  }
}
