/**
 * Streaming XML reader on the `sax` parser (strict mode). Every `<rowElement>` (at any depth)
 * is one record; its cell holds the element converted to a JSON object (the same shape of cell
 * as the JSON reader), with this convention:
 * - attributes become `"@name": "value"`;
 * - a child element without attributes and without children becomes `"name": "text"` (its text
 *   exactly, `""` when empty); any other child becomes a nested object;
 * - repeated children with the same name become an array, in document order;
 * - an element's own text becomes `"#text"` (kept exactly, omitted when only whitespace), so
 *   `<price cur="EUR">9.50</price>` is `{"@cur":"EUR","#text":"9.50"}`;
 * - the record itself is always an object (`<row>x</row>` is `{"#text":"x"}`);
 * - names are used as written, prefixes included; CDATA is text; comments and processing
 *   instructions are dropped. A `rowElement` without a prefix also matches `anyprefix:rowElement`.
 *
 * Safety: a DOCTYPE anywhere is refused before any of it is used (so no DTD, no entity
 * definitions, no external resources); only the five predefined entities and numeric character
 * references are decoded. Input must be UTF-8 without the control characters XML 1.0 forbids
 * (reported at the first offending byte). Any well-formedness error is fatal
 * (FatalReadError with sax's message and the line); the records completed before the error are
 * yielded first. sax's own limit applies: one attribute value, comment or tag name longer than
 * 64 Ki characters is an error. Elements nested deeper than MAX_XML_DEPTH, an element with more than
 * MAX_XML_ATTRIBUTES attributes, or open elements holding more than OPEN_ATTRIBUTES_PER_RECORD times
 * maxRecordBytes of attributes end the read the same way; a record nested deeper than
 * MAX_XML_RECORD_DEPTH is a row error.
 */
import * as sax from 'sax';
import { ByteInput, ChunkDecoder, DEFAULT_MIN_CHUNK, DecodedChunk, rechunk } from './chunks';
import { BatchSink, DEFAULT_BATCH_ROWS, DEFAULT_MAX_BYTES, formatBytes, positiveOption } from './batch-sink';
import { FatalReadError, RecordBatch } from './record-batch';

export interface XmlReadOptions {
  /** Name of the element that holds one record, e.g. `row`. */
  rowElement: string;
  /** Records (rows plus row errors) per yielded batch; default 5,000. */
  batchRows?: number;
  /** Largest record (characters of names, attribute values and text); default 16 MiB. Larger is a row error. */
  maxRecordBytes?: number;
  /** Input chunks smaller than this are coalesced first; default 64 KiB (tests use 1). */
  minChunkBytes?: number;
}

export const XML_DOCTYPE_ERROR = 'XML with a DOCTYPE is refused (no DTDs, no entity expansion)';

/**
 * Deepest element nesting in a document. sax keeps every open element (about 50 bytes of heap per
 * byte of `<a>`), so unbounded nesting let 9 MiB of input take 425 MiB; real documents nest a few
 * tens of levels.
 */
export const MAX_XML_DEPTH = 256;
/**
 * Deepest nesting inside one record, the JSON reader's default: the record becomes a nested object
 * that later stages walk recursively. Deeper is a row error, as for JSON.
 */
export const MAX_XML_RECORD_DEPTH = 64;
/** Attributes on one element: sax builds them all into one object (about 8 bytes of heap per byte). */
export const MAX_XML_ATTRIBUTES = 1000;
/**
 * Characters of attribute names and values the open elements may hold together, in records'
 * maxRecordBytes (64 MiB by default): sax keeps each open element's attributes until it closes, so
 * this bounds that memory whatever the file's size, and a record over its own limit is still only
 * a row error.
 */
export const OPEN_ATTRIBUTES_PER_RECORD = 4;

type Obj = Record<string, unknown>;

interface Frame {
  obj: Obj | null;
  text: string;
}

/** The parts of sax's parser state that the typings leave out. */
interface SaxInternals {
  doctype: unknown;
  c: string;
}

/** Reads XML records from `input` and yields them in batches of up to `batchRows` records. */
export async function* readXml(input: ByteInput, opts: XmlReadOptions): AsyncGenerator<RecordBatch> {
  const rowElement = (opts.rowElement ?? '').trim();
  if (rowElement === '') throw new FatalReadError('the XML rowElement option is required');
  const maxRecordBytes = positiveOption('maxRecordBytes', opts.maxRecordBytes, DEFAULT_MAX_BYTES);
  const maxOpenAttributeChars = OPEN_ATTRIBUTES_PER_RECORD * maxRecordBytes;
  const builder = new RecordBuilder(
    rowElement,
    maxRecordBytes,
    new BatchSink(positiveOption('batchRows', opts.batchRows, DEFAULT_BATCH_ROWS)),
  );
  const sink = builder.sink;
  const saxOptions: sax.SAXOptions & { strictEntities: boolean } = { position: true, strictEntities: true };
  const parser = sax.parser(true, saxOptions);
  const internals = parser as unknown as SaxInternals;
  let fatal: FatalReadError | null = null;
  let sawContent = false;
  let sawRoot = false;
  /** Attribute characters of each open element (the one being started last), and their sum. */
  const openAttributeChars: number[] = [];
  let heldAttributeChars = 0;
  let tagAttributes = 0;

  const fail = (err: FatalReadError): void => {
    if (fatal === null) fatal = err;
  };
  /** A sax callback's error (a limit, thrown to stop sax mid-chunk) or sax's own. */
  const failOn = (err: unknown): void => {
    if (err instanceof FatalReadError) fail(err);
    else parser.onerror(err as Error);
  };
  /** Thrown from a sax callback: sax stops at once instead of parsing the rest of the chunk. */
  const overLimit = (what: string): FatalReadError =>
    new FatalReadError(`XML ${what} at line ${parser.line + 1}, column ${parser.column}`, parser.line + 1);
  const doctypeSeen = (): boolean =>
    internals.doctype === true || (typeof internals.doctype === 'string' && internals.doctype.length > 0);

  /** Refuses a DOCTYPE, reporting the line where it starts (`text`: what sax has read of it). */
  const refuseDoctype = (text: unknown): void => {
    const newlines = typeof text === 'string' ? text.split('\n').length - 1 : 0;
    fail(new FatalReadError(XML_DOCTYPE_ERROR, parser.line + 1 - newlines));
  };
  parser.onerror = (err: Error) => {
    const message = err.message.split('\n')[0].replace(/\.$/, '');
    if (doctypeSeen() || /doctype/i.test(message)) return refuseDoctype(internals.doctype);
    fail(
      new FatalReadError(
        `invalid XML at line ${parser.line + 1}, column ${parser.column}: ${message}`,
        parser.line + 1,
      ),
    );
  };
  parser.ondoctype = (doctype) => refuseDoctype(doctype);
  parser.onopentagstart = () => {
    // The line of `<name`: the character that ended the name may be a line break.
    builder.tagLine = parser.line + (internals.c === '\n' ? 0 : 1);
    if (openAttributeChars.length === MAX_XML_DEPTH)
      throw overLimit(`nested deeper than ${MAX_XML_DEPTH} elements`);
    openAttributeChars.push(0);
    tagAttributes = 0;
  };
  parser.onattribute = (attribute) => {
    if (++tagAttributes > MAX_XML_ATTRIBUTES)
      throw overLimit(`element with more than ${MAX_XML_ATTRIBUTES} attributes`);
    const chars = attribute.name.length + attribute.value.length;
    openAttributeChars[openAttributeChars.length - 1] += chars;
    heldAttributeChars += chars;
    if (heldAttributeChars > maxOpenAttributeChars)
      throw overLimit(`open elements with more than ${formatBytes(maxOpenAttributeChars)} of attributes`);
  };
  parser.onopentag = (tag) => {
    sawRoot = true;
    if (fatal === null) builder.open(tag as sax.Tag);
  };
  parser.onclosetag = (name) => {
    heldAttributeChars -= openAttributeChars.pop() ?? 0;
    if (fatal === null) builder.close(name);
  };
  parser.ontext = (text) => {
    if (fatal === null) builder.text(text);
  };
  parser.oncdata = (text) => {
    if (fatal === null) builder.text(text);
  };

  const decoder = new ChunkDecoder('utf-8');
  const feed = (text: string): void => {
    if (fatal !== null || text === '') return;
    if (!sawContent && text.trim() !== '') sawContent = true;
    try {
      parser.write(text);
    } catch (err) {
      failOn(err);
    }
    if (fatal === null && doctypeSeen()) refuseDoctype(internals.doctype);
  };
  /**
   * Feeds a chunk to sax up to its first byte XML cannot hold (invalid UTF-8, or a control
   * character XML 1.0 forbids), then fails there: the first problem by position is reported, so
   * the outcome does not depend on where chunks end.
   */
  const write = (chunk: DecodedChunk): void => {
    if (fatal !== null) return;
    const bytes = chunk.bytes;
    const control = firstForbiddenControl(bytes);
    const bad = chunk.badPos.length > 0 ? chunk.badPos[0] : -1;
    if (control < 0 && bad < 0) {
      feed(chunk.wholeText() ?? '');
      return;
    }
    const stop = bad < 0 || (control >= 0 && control < bad) ? control : bad;
    feed(bytes.toString('utf8', 0, stop));
    if (fatal !== null) return;
    const offset = chunk.offset + stop;
    fail(
      stop === bad
        ? new FatalReadError(
            `invalid UTF-8 at byte offset ${offset} (XML input must be UTF-8)`,
            parser.line + 1,
          )
        : new FatalReadError(
            `invalid XML at byte offset ${offset}: byte 0x${bytes[stop].toString(16).padStart(2, '0')} is not allowed in XML`,
            parser.line + 1,
          ),
    );
  };

  for await (const chunk of rechunk(
    input,
    positiveOption('minChunkBytes', opts.minChunkBytes, DEFAULT_MIN_CHUNK),
  )) {
    write(decoder.decode(chunk));
    for (let b = sink.take(); b !== undefined; b = sink.take()) yield b;
    if (fatal !== null) break;
  }
  if (fatal === null) {
    const tail = decoder.end();
    if (tail.length > 0) write(tail);
  }
  if (fatal === null) {
    try {
      parser.close();
    } catch (err) {
      failOn(err);
    }
  }
  if (fatal === null && !sawRoot) {
    fail(new FatalReadError(sawContent ? 'the XML document has no root element' : 'the file is empty'));
  }
  sink.finish(false);
  for (let b = sink.take(); b !== undefined; b = sink.take()) yield b;
  if (fatal !== null) throw fatal;
}

class RecordBuilder {
  /** Line of the start tag being opened (set by onopentagstart). */
  tagLine = 1;
  private readonly suffix: string | null;
  private readonly limitText: string;
  /** Open elements of the record in progress (empty: not in a record). */
  private stack: Frame[] = [];
  /** Depth inside the record when it is being skipped (too large or too deep). */
  private skipDepth = 0;
  /** Why the record being skipped is a row error. */
  private skipReason = '';
  private size = 0;
  private recordLine = 0;
  private startTag = '';

  constructor(
    private readonly rowElement: string,
    private readonly maxBytes: number,
    readonly sink: BatchSink,
  ) {
    this.suffix = rowElement.includes(':') ? null : `:${rowElement}`;
    this.limitText = formatBytes(maxBytes);
  }

  private isRow(name: string): boolean {
    return name === this.rowElement || (this.suffix !== null && name.endsWith(this.suffix));
  }

  open(tag: sax.Tag): void {
    if (this.skipDepth > 0) {
      this.skipDepth++;
      return;
    }
    if (this.stack.length === 0) {
      if (!this.isRow(tag.name)) return;
      this.recordLine = this.tagLine;
      this.size = 0;
      this.startTag = startTagText(tag);
    } else if (this.stack.length === MAX_XML_RECORD_DEPTH) {
      this.skip(`nesting deeper than ${MAX_XML_RECORD_DEPTH} levels`, this.stack.length + 1);
      return;
    }
    let obj: Obj | null = null;
    let size = tag.name.length;
    for (const name of Object.keys(tag.attributes)) {
      const value = tag.attributes[name];
      obj ??= Object.create(null) as Obj;
      obj[`@${name}`] = value;
      size += name.length + value.length + 1;
    }
    this.stack.push({ obj, text: '' });
    this.grow(size);
  }

  text(text: string): void {
    if (this.skipDepth > 0 || this.stack.length === 0) return;
    this.stack[this.stack.length - 1].text += text;
    this.grow(text.length);
  }

  close(name: string): void {
    if (this.skipDepth > 0) {
      if (--this.skipDepth === 0) this.sink.addError(this.recordLine, this.skipReason, this.startTag);
      return;
    }
    const frame = this.stack.pop();
    if (frame === undefined) return;
    if (this.stack.length === 0) {
      const obj = frame.obj ?? (Object.create(null) as Obj);
      if (frame.text.trim() !== '') obj['#text'] = frame.text;
      this.sink.addRow([JSON.stringify(obj)], this.recordLine);
      return;
    }
    let value: unknown;
    if (frame.obj === null) value = frame.text;
    else {
      if (frame.text.trim() !== '') frame.obj['#text'] = frame.text;
      value = frame.obj;
    }
    const parent = this.stack[this.stack.length - 1];
    parent.obj ??= Object.create(null) as Obj;
    const existing = parent.obj[name];
    if (existing === undefined) parent.obj[name] = value;
    else if (Array.isArray(existing)) existing.push(value);
    else parent.obj[name] = [existing, value];
  }

  private grow(n: number): void {
    this.size += n;
    if (this.size > this.maxBytes) this.skip(`record exceeds ${this.limitText}`, this.stack.length);
  }

  /** Drops what was built of the record and skips to its end (`depth` elements are open in it). */
  private skip(reason: string, depth: number): void {
    this.skipReason = reason;
    this.skipDepth = depth;
    this.stack = [];
  }
}

/** Position of the first C0 control byte other than tab, line feed and carriage return, or -1. */
function firstForbiddenControl(bytes: Buffer): number {
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) return i;
  }
  return -1;
}

function startTagText(tag: sax.Tag): string {
  let s = `<${tag.name}`;
  for (const name of Object.keys(tag.attributes)) {
    s += ` ${name}="${tag.attributes[name].replaceAll('&', '&amp;').replaceAll('"', '&quot;').replaceAll('<', '&lt;')}"`;
    if (s.length > 1000) break;
  }
  return `${s}>`;
}
