import { extname, join } from 'node:path';
import sax from 'sax';
import { spawnWorker } from '@tapyard/core';
import { SchemaSampleError } from './sample-error';
import type { Worker } from 'node:worker_threads';
import type { XsdCall, XsdCheck, XsdThreadReply } from './xsd-thread';

/**
 * Records per xmllint call. A call costs a fresh instance of libxml2's WebAssembly besides its records
 * (see xsd-thread.ts), so fewer calls are faster. The bound is not xmllint's heap but its command line,
 * one file name per record, copied onto a fixed stack: 3,000 names of `r<n>.xml` fit, 3,500 overflow it
 * ("memory access out of bounds"). Names count from 0 in each call, so 2,000 keep that margin however
 * large the batch.
 */
const PER_CALL = 2_000;

/**
 * How long a check may take: a base, and per record ten times what xmllint takes on an ordinary one
 * (5,000-7,000 records a second). An XSD whose `xs:pattern` backtracks (`((a|aa)+)+b` took about a
 * second a value) is stopped there instead of holding a core for minutes.
 */
const CHECK_BASE_MS = 10_000;
const CHECK_MS_PER_RECORD = 2;

type Obj = Record<string, unknown>;

/**
 * Checks records against an XSD with libxml2 (xmllint compiled to WebAssembly). Records arrive as the
 * objects the XML reader builds (`@attr`, `#text`, repeated children as arrays) and are written back
 * as XML: a record alone when the XSD declares the record element globally, otherwise wrapped in the
 * schema's first global element (the document root of the sample a generated XSD came from).
 * Interleaved repeats (`<a/><b/><a/>`) come back grouped (`<a/><a/><b/>`), which a strict
 * `xs:sequence` may then refuse.
 */
export class XsdRecordValidator {
  /** The thread the checks run in, kept between a job's batches (see CheckThread). */
  private thread: CheckThread | null = null;
  /** Checks run one after the other: each one's deadline counts from its own start. */
  private turn: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly xsd: string,
    private readonly rowElement: string,
    private readonly wrapper: string | null,
    private readonly deadline: (records: number) => number,
    private readonly idleMs: number,
  ) {}

  static create(
    xsd: string,
    rowElement: string,
    deadline = (records: number) => CHECK_BASE_MS + CHECK_MS_PER_RECORD * records,
    idleMs = IDLE_MS,
  ): XsdRecordValidator {
    const globals = globalElements(xsd);
    const local = rowElement.slice(rowElement.indexOf(':') + 1);
    if (globals.length === 0) throw new SchemaSampleError('the XSD declares no global element');
    return new XsdRecordValidator(xsd, local, globals.includes(local) ? null : globals[0], deadline, idleMs);
  }

  /** The thread's id while this validator has one (it ends when idle, or past a check's deadline). */
  get threadId(): number | null {
    return this.thread?.id ?? null;
  }

  /** One reason per record (null: valid), in order. */
  async check(records: Obj[]): Promise<(string | null)[]> {
    const reasons: (string | null)[] = records.map(() => null);
    const calls: XsdCall[] = [];
    for (let start = 0; start < records.length; start += PER_CALL) {
      const slice = records.slice(start, start + PER_CALL);
      calls.push(slice.map((r, i) => ({ fileName: `r${i}.xml`, contents: this.document(r) })));
    }
    const ms = this.deadline(records.length);
    const answering = this.turn.then(() => this.validated(calls, ms));
    this.turn = answering.catch(() => undefined);
    const answers = await answering;
    for (const [call, errors] of answers.entries()) {
      for (const e of errors) {
        // xmllint adds a summary line per failed file ("r3.xml fails to validate"); the detail has a location.
        if (e.fileName === null && /^r\d+\.xml fails to validate/.test(e.message.trim())) continue;
        const m = /^r(\d+)\.xml$/.exec(e.fileName ?? '');
        // libxml2 gave up inside its own checks (a pattern's backtracking ran out of its limits):
        // the record may well be valid, so it is the XSD's failure, not the record's reject.
        const internal = /Internal error: (.*)$/.exec(e.message.trim());
        const i = m ? call * PER_CALL + Number(m[1]) : -1;
        if (internal) {
          throw new SchemaSampleError(
            `the XSD cannot be used: xmllint failed inside its checks of record ${m ? i + 1 : '?'} ` +
              `of the batch (${internal[1]}); an xs:pattern that backtracks is the usual cause: simplify its patterns`,
          );
        }
        if (!m || i >= records.length)
          throw new SchemaSampleError(`the XSD cannot be used: ${e.message.trim()}`);
        reasons[i] ??= e.message.replace(/^.*?validity error : /, '').trim();
      }
    }
    return reasons;
  }

  /** Each call's errors, from this validator's thread (started when there is none). */
  private validated(calls: XsdCall[], ms: number): Promise<XsdErrors> {
    let thread = this.thread;
    if (!thread) {
      const started: CheckThread = new CheckThread(this.xsd, this.idleMs, () => {
        if (this.thread === started) this.thread = null;
      });
      thread = this.thread = started;
    }
    return thread.check(calls, ms);
  }

  private document(record: Obj): string {
    const xml = element(this.rowElement, record);
    return this.wrapper === null ? xml : `<${this.wrapper}>${xml}</${this.wrapper}>`;
  }
}

type XsdErrors = Extract<XsdThreadReply, { ok: true }>['errors'];

/** A thread with nothing to check for this long ends: a job's batches come closer together than that. */
const IDLE_MS = 2_000;

/**
 * The thread of one validator's checks. Starting it (and compiling libxml2 in it) costs some 60 ms, so
 * the batches of a job share it; it ends once idle for IDLE_MS, and never holds its process open. A
 * check past its deadline ends it at once (nothing else stops libxml2 mid-call), and the next check
 * starts another.
 */
class CheckThread {
  private readonly worker: Worker;
  readonly id: number;
  private pending: {
    id: number;
    resolve: (errors: XsdErrors) => void;
    reject: (err: Error) => void;
  } | null = null;
  private ids = 0;
  private idle: NodeJS.Timeout | null = null;
  private ended = false;

  constructor(
    schema: string,
    private readonly idleMs: number,
    private readonly gone: () => void,
  ) {
    this.worker = spawnWorker(join(__dirname, `xsd-thread${extname(__filename)}`), { data: { schema } });
    this.id = this.worker.threadId;
    this.worker.unref();
    this.worker.on('message', (reply: XsdThreadReply) => {
      const p = this.pending;
      if (!p || reply.id !== p.id) return;
      this.pending = null;
      this.wait();
      if (reply.ok) p.resolve(reply.errors);
      else p.reject(new Error(reply.message));
    });
    this.worker.on('error', (err) => this.end(err));
    // Ended without a word (killed, out of memory): the check fails rather than waits for ever.
    this.worker.on('exit', (code) =>
      this.end(new Error(`the XSD check's thread ended (${code}) before it answered`)),
    );
  }

  check(calls: XsdCall[], ms: number): Promise<XsdErrors> {
    if (this.idle) clearTimeout(this.idle);
    return new Promise<XsdErrors>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          this.end(
            new SchemaSampleError(
              `the XSD took longer than ${Math.round(ms / 1000)} s to check ${calls.flat().length} records ` +
                '(an xs:pattern that backtracks costs about a second a value): simplify its patterns',
            ),
          ),
        ms,
      );
      const id = ++this.ids;
      this.pending = {
        id,
        resolve: (errors) => {
          clearTimeout(timer);
          resolve(errors);
        },
        reject: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      };
      this.worker.postMessage({ id, calls } satisfies XsdCheck);
    });
  }

  private wait(): void {
    this.idle = setTimeout(() => this.end(null), this.idleMs);
    this.idle.unref();
  }

  /** Ends the thread; a check it was running fails with `err`. */
  private end(err: Error | null): void {
    if (this.idle) clearTimeout(this.idle);
    const p = this.pending;
    this.pending = null;
    if (p) p.reject(err ?? new Error("the XSD check's thread ended"));
    if (this.ended) return;
    this.ended = true;
    this.gone();
    void this.worker.terminate();
  }
}

/** Names of the `xs:element` declarations directly under `xs:schema` (local names). */
function globalElements(xsd: string): string[] {
  const names: string[] = [];
  const parser = sax.parser(true, { xmlns: false });
  let depth = 0;
  parser.onopentag = (tag) => {
    depth++;
    const local = tag.name.slice(tag.name.indexOf(':') + 1);
    const name = (tag.attributes as Record<string, string>).name;
    if (depth === 2 && local === 'element' && typeof name === 'string') names.push(name);
  };
  parser.onclosetag = () => depth--;
  parser.onerror = (err) => {
    throw err;
  };
  parser.ondoctype = () => {
    throw new SchemaSampleError('an XSD with a DOCTYPE is refused');
  };
  try {
    parser.write(xsd).close();
  } catch (err) {
    if (err instanceof SchemaSampleError) throw err;
    throw new SchemaSampleError(`the XSD is not well-formed XML: ${(err as Error).message.split('\n')[0]}`);
  }
  return names;
}

function element(name: string, value: unknown): string {
  if (Array.isArray(value)) return value.map((v) => element(name, v)).join('');
  if (value === null || typeof value !== 'object') return `<${name}>${escape(String(value ?? ''))}</${name}>`;
  let attrs = '';
  let body = '';
  for (const [key, v] of Object.entries(value as Obj)) {
    if (key.startsWith('@')) attrs += ` ${key.slice(1)}="${escape(String(v), true)}"`;
    else if (key === '#text') body += escape(String(v));
    else body += element(key, v);
  }
  return `<${name}${attrs}>${body}</${name}>`;
}

function escape(text: string, attribute = false): string {
  const s = text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  return attribute ? s.replace(/"/g, '&quot;') : s;
}
