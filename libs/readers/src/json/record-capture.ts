/**
 * The text of the record being read, cut out of the decoded chunks it spans, with the record
 * limits: too deep or too large stops capturing (only the start is kept for `RowError.raw`), and
 * invalid UTF-8 inside it is noted by file offset.
 */
import { RAW_BYTES, RAW_LIMIT, formatBytes } from '../batch-sink';
import { DecodedChunk } from '../chunks';

export const EMPTY_CHUNK = new DecodedChunk(Buffer.alloc(0), 'ascii');

export class RecordCapture {
  active = false;
  /** 1-based line where the record starts. */
  line = 0;
  /** A number of 16 or more digits: JSON.parse would round it, so the text is kept as written. */
  bigNumber = false;
  private start = 0;
  private parts: string[] = [];
  private bytes = 0;
  /** Why the record is no longer captured (too deep, too large); its start stays in rawPrefix. */
  private dropped: string | null = null;
  private rawPrefix = '';
  private badOffset = -1;
  private chunk = EMPTY_CHUNK;
  private badIdx = 0;

  constructor(private readonly maxBytes: number) {}

  /** A new chunk is being scanned. */
  setChunk(chunk: DecodedChunk): void {
    this.chunk = chunk;
    this.badIdx = 0;
  }

  begin(at: number, line: number): void {
    this.active = true;
    this.line = line;
    this.start = at;
    this.parts = [];
    this.bytes = 0;
    this.dropped = null;
    this.rawPrefix = '';
    this.badOffset = -1;
    this.bigNumber = false;
    // Invalid UTF-8 before the record is outside every record: it loads nothing.
    const bad = this.chunk.badPos;
    while (this.badIdx < bad.length && bad[this.badIdx] < at) this.badIdx++;
  }

  drop(reason: string): void {
    if (this.dropped !== null) return;
    const head = this.parts.join('');
    this.rawPrefix = head.length > RAW_LIMIT ? head.slice(0, RAW_LIMIT) : head;
    this.parts = [];
    this.dropped = reason;
  }

  /** The chunk ends inside the record: keep its part. */
  chunkEnd(): void {
    if (!this.active) return;
    const n = this.chunk.length;
    this.noteBad(n);
    this.push(this.start, n);
    this.start = 0;
  }

  /** The record ends before `end` of the current chunk: its text, or why it is refused. */
  end(end: number): { text: string; reason: string | null } {
    this.active = false;
    this.noteBad(end);
    let reason: string | null = this.dropped;
    let text: string;
    if (reason === null && this.bytes + (end - this.start) > this.maxBytes) {
      this.drop(`record exceeds ${formatBytes(this.maxBytes)}`);
      reason = this.dropped;
    }
    if (reason !== null) {
      this.grow(this.start, end);
      text = this.rawPrefix;
    } else {
      text = this.chunk.slice(this.start, end);
      if (this.parts.length > 0) {
        this.parts.push(text);
        text = this.parts.join('');
      }
      if (this.badOffset >= 0) reason = `invalid UTF-8 at byte offset ${this.badOffset}`;
    }
    this.parts = [];
    this.bytes = 0;
    return { text, reason };
  }

  /** The start of the record read so far, up to `at` of the current chunk (for a reject). */
  head(at: number): string {
    if (!this.active) return '';
    if (this.dropped !== null) return this.rawPrefix;
    let head = this.parts.join('');
    if (head.length < RAW_LIMIT) head += this.chunk.slice(this.start, Math.min(at, this.start + RAW_BYTES));
    return head.length > RAW_LIMIT ? head.slice(0, RAW_LIMIT) : head;
  }

  private noteBad(end: number): void {
    const bad = this.chunk.badPos;
    if (this.badIdx < bad.length && bad[this.badIdx] < end) {
      if (this.badOffset < 0) this.badOffset = this.chunk.badOffsets[this.badIdx];
      while (this.badIdx < bad.length && bad[this.badIdx] < end) this.badIdx++;
    }
  }

  private push(s: number, e: number): void {
    if (e <= s) return;
    if (this.dropped === null && this.bytes + (e - s) > this.maxBytes) {
      this.drop(`record exceeds ${formatBytes(this.maxBytes)}`);
    }
    if (this.dropped !== null) {
      this.grow(s, e);
      return;
    }
    this.parts.push(this.chunk.slice(s, e));
    this.bytes += e - s;
  }

  private grow(s: number, e: number): void {
    if (this.rawPrefix.length >= RAW_LIMIT) return;
    const raw = this.rawPrefix + this.chunk.slice(s, Math.min(e, s + RAW_BYTES));
    this.rawPrefix = raw.length > RAW_LIMIT ? raw.slice(0, RAW_LIMIT) : raw;
  }
}
