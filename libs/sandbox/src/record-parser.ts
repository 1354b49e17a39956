/**
 * Parses the harness's record channel (file descriptor 3). Framing, one item per line:
 *  - a record: JSON text (the harness escapes newlines; JSON text never starts with "!" or "#");
 *  - rows mode: "#" + JSON array of keys seen for the first time, before the record that has them;
 *  - a control line: "!" + JSON object, exactly one and last:
 *      {"type":"done","records":N(,"state":{...})} or {"type":"error","kind":K,"message":M,...details}.
 */
export type ControlMessage =
  | { type: 'done'; records: number; state?: Record<string, unknown> }
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
  private text = '';
  private lines = 0;
  private fresh: string[] = [];
  /** false: records are counted and passed on as text, never parsed (the caller stores them). */
  parse = true;

  constructor(private readonly maxRecordBytes: number) {}

  get count(): number {
    return this.parsed;
  }

  /** The records of the last push() as the harness wrote them: JSON lines joined by "\n". */
  get lastText(): string {
    return this.text;
  }

  /** How many records the last push() brought (also when not parsing). */
  get lastCount(): number {
    return this.lines;
  }

  /** Keys lines (rows mode) of the last push(): keys seen for the first time, in order. */
  get lastKeys(): string[] {
    return this.fresh;
  }

  /** Set once the control line has arrived; nothing after it is read. */
  get control(): ControlMessage | null {
    return this.controlMessage;
  }

  /** Parses every complete line in `chunk`; a trailing partial line waits for the next chunk. */
  push(chunk: Buffer): unknown[] {
    this.text = '';
    this.lines = 0;
    this.fresh = [];
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
    // Keys lines are rare (a key's first appearance): take them out before anything else.
    if (body.startsWith('#') || body.includes('\n#')) body = this.takeKeys(body);
    if (!body) return [];
    if (body.length > this.maxRecordBytes) this.checkLineLengths(body);
    this.text = body;
    if (!this.parse) {
      let n = 1;
      for (let i = body.indexOf('\n'); i >= 0; i = body.indexOf('\n', i + 1)) n++;
      this.lines = n;
      this.parsed += n;
      return [];
    }
    const records = parseBatch(body);
    this.parsed += records.length;
    this.lines = records.length;
    return records;
  }

  private takeKeys(body: string): string {
    const kept: string[] = [];
    for (const line of body.split('\n')) {
      if (!line.startsWith('#')) {
        kept.push(line);
        continue;
      }
      let keys: unknown;
      try {
        keys = JSON.parse(line.slice(1));
      } catch {
        keys = null;
      }
      if (!Array.isArray(keys) || !keys.every((k) => typeof k === 'string'))
        throw new RecordStreamError('malformed', 'the record channel carried a malformed keys line');
      this.fresh.push(...(keys as string[]));
    }
    return kept.join('\n');
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
  if (v.type === 'done')
    return (
      typeof v.records === 'number' &&
      (v.state === undefined || (typeof v.state === 'object' && v.state !== null && !Array.isArray(v.state)))
    );
  return v.type === 'error' && typeof v.kind === 'string' && typeof v.message === 'string';
}
