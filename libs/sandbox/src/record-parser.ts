/**
 * Parses the harness's record channel (file descriptor 3). Framing, one item per line:
 *  - a record: JSON text (the harness escapes newlines; JSON text never starts with "!");
 *  - a control line: "!" + JSON object, exactly one and last:
 *      {"type":"done","records":N} or {"type":"error","kind":K,"message":M,...details}.
 */
export type ControlMessage =
  | { type: 'done'; records: number }
  | { type: 'error'; kind: string; message: string; [detail: string]: unknown };

const NEWLINE = 0x0a;

export class RecordStreamError extends Error {
  override readonly name = 'RecordStreamError';

  constructor(
    readonly reason: 'too_large' | 'malformed',
    message: string,
  ) {
    super(message);
  }
}

export class RecordParser {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private parsed = 0;
  private controlMessage: ControlMessage | null = null;

  constructor(private readonly maxRecordBytes: number) {}

  get count(): number {
    return this.parsed;
  }

  /** Set once the control line has arrived; nothing after it is read. */
  get control(): ControlMessage | null {
    return this.controlMessage;
  }

  /** Parses every complete line in `chunk`; a trailing partial line waits for the next chunk. */
  push(chunk: Buffer): unknown[] {
    if (this.controlMessage) return [];
    const last = chunk.lastIndexOf(NEWLINE);
    if (last < 0) {
      this.keep(chunk);
      return [];
    }
    const firstEnd = chunk.indexOf(NEWLINE);
    if (this.pendingBytes + firstEnd > this.maxRecordBytes) this.tooLarge();
    const head = this.pending.length ? Buffer.concat([...this.pending, chunk.subarray(0, last)]) : chunk;
    const text = head.toString('utf8', 0, this.pending.length ? head.length : last);
    this.pending = [];
    this.pendingBytes = 0;
    if (last + 1 < chunk.length) this.keep(chunk.subarray(last + 1));
    return this.parseLines(text);
  }

  private keep(part: Buffer): void {
    this.pending.push(part);
    this.pendingBytes += part.length;
    if (this.pendingBytes > this.maxRecordBytes) this.tooLarge();
  }

  private tooLarge(): never {
    throw new RecordStreamError('too_large', `record ${this.parsed} is larger than the limit`);
  }

  /** `text` holds complete lines without the final newline. */
  private parseLines(text: string): unknown[] {
    let body = text;
    // A raw newline never occurs inside a record, so "\n!" can only be a control line's start.
    const controlAt = text.startsWith('!') ? 0 : text.indexOf('\n!') + 1;
    if (controlAt > 0 || text.startsWith('!')) {
      const end = text.indexOf('\n', controlAt);
      this.controlMessage = parseControl(text.slice(controlAt + 1, end < 0 ? undefined : end));
      body = controlAt === 0 ? '' : text.slice(0, controlAt - 1);
    }
    if (!body) return [];
    if (body.length > this.maxRecordBytes) this.checkLineLengths(body);
    const records = parseBatch(body);
    this.parsed += records.length;
    return records;
  }

  /** Only reached when a batch is larger than one record may be: find an oversized line. */
  private checkLineLengths(body: string): void {
    let start = 0;
    while (start <= body.length) {
      const end = body.indexOf('\n', start);
      const stop = end < 0 ? body.length : end;
      if (Buffer.byteLength(body.slice(start, stop)) > this.maxRecordBytes) this.tooLarge();
      start = stop + 1;
    }
  }
}

/**
 * One JSON.parse per batch instead of one per line: records never contain a raw newline, so
 * joining lines with commas inside brackets yields the array of records.
 */
function parseBatch(body: string): unknown[] {
  try {
    return JSON.parse(`[${body.replaceAll('\n', ',')}]`) as unknown[];
  } catch {
    throw new RecordStreamError('malformed', 'the record channel carried a line that is not JSON');
  }
}

function parseControl(text: string): ControlMessage {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new RecordStreamError('malformed', 'the record channel carried a malformed control line');
  }
  if (isControl(value)) return value;
  throw new RecordStreamError('malformed', 'the record channel carried an unknown control line');
}

function isControl(value: unknown): value is ControlMessage {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  if (v.type === 'done') return typeof v.records === 'number';
  return v.type === 'error' && typeof v.kind === 'string' && typeof v.message === 'string';
}
