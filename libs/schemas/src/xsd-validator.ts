import { extname, join } from 'node:path';
import sax from 'sax';
import { spawnWorker } from '@tapyard/core';
import { SchemaSampleError } from './sample-error';
import type { XsdCalls, XsdThreadReply } from './xsd-thread';

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
  private constructor(
    private readonly xsd: string,
    private readonly rowElement: string,
    private readonly wrapper: string | null,
    private readonly deadline: (records: number) => number,
  ) {}

  static create(
    xsd: string,
    rowElement: string,
    deadline = (records: number) => CHECK_BASE_MS + CHECK_MS_PER_RECORD * records,
  ): XsdRecordValidator {
    const globals = globalElements(xsd);
    const local = rowElement.slice(rowElement.indexOf(':') + 1);
    if (globals.length === 0) throw new SchemaSampleError('the XSD declares no global element');
    return new XsdRecordValidator(xsd, local, globals.includes(local) ? null : globals[0], deadline);
  }

  /** One reason per record (null: valid), in order. */
  async check(records: Obj[]): Promise<(string | null)[]> {
    const reasons: (string | null)[] = records.map(() => null);
    const calls: XsdCalls['calls'] = [];
    for (let start = 0; start < records.length; start += PER_CALL) {
      const slice = records.slice(start, start + PER_CALL);
      calls.push(slice.map((r, i) => ({ fileName: `r${i}.xml`, contents: this.document(r) })));
    }
    const answers = await validated({ schema: this.xsd, calls }, this.deadline(records.length));
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

  private document(record: Obj): string {
    const xml = element(this.rowElement, record);
    return this.wrapper === null ? xml : `<${this.wrapper}>${xml}</${this.wrapper}>`;
  }
}

/** Each call's errors, from a thread ended (with xmllint's worker) when `ms` pass. */
function validated(work: XsdCalls, ms: number): Promise<Extract<XsdThreadReply, { ok: true }>['errors']> {
  const thread = spawnWorker(join(__dirname, `xsd-thread${extname(__filename)}`), { data: work });
  return new Promise<Extract<XsdThreadReply, { ok: true }>['errors']>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(
        new SchemaSampleError(
          `the XSD took longer than ${Math.round(ms / 1000)} s to check ${work.calls.flat().length} records ` +
            '(an xs:pattern that backtracks costs about a second a value): simplify its patterns',
        ),
      );
      void thread.terminate();
    }, ms);
    thread.once('message', (reply: XsdThreadReply) => {
      clearTimeout(timer);
      void thread.terminate();
      if (reply.ok) resolve(reply.errors);
      else reject(new Error(reply.message));
    });
    thread.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    // Ended without a word (killed, out of memory): the check fails rather than waits for ever.
    thread.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the XSD check's thread ended (${code}) before it answered`));
    });
  });
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
