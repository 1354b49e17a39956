import fc from 'fast-check';
import { ReaderPool, ReaderResult } from './support/reader-pool';
import { FUZZ_TEST_TIMEOUT, corpus, fuzzParameters, keep } from './support/fuzz-options';
import { applyMutations, chunkSize, mutations } from './support/mutate';

/**
 * Fuzzing of the XML reader. Valid documents are generated from the records they hold, so the
 * generator is the reference: each record must read back as exactly the object the documented
 * convention gives (attributes `@name`, text-only children as strings, repeated children as arrays,
 * own text as `#text`). Corrupted documents end in time, give the same result at any chunk size, and
 * either read into JSON objects or fail with a FatalReadError naming the line.
 */
describe('XML reader fuzz (round trip through generated documents)', () => {
  const pool = new ReaderPool();
  afterAll(() => pool.close());

  type Obj = Record<string, unknown>;
  interface Child {
    name: string;
    attrs: [string, string][];
    text: string;
  }
  interface Rec {
    attrs: [string, string][];
    text: string;
    children: Child[];
  }

  const esc = (s: string) =>
    s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');
  const chars = fc.constantFrom('a', 'Z', ' ', '&', '<', '>', '"', "'", 'é', '😀', '1', '\n', '\t');
  const text = fc.string({ unit: chars, maxLength: 6 });
  const attrs = fc.uniqueArray(fc.tuple(fc.constantFrom('id', 'k', 'x:y'), text), {
    selector: ([n]) => n,
    maxLength: 2,
  });
  const child = fc.record({ name: fc.constantFrom('a', 'b', 'p:c'), attrs, text });
  const rec = fc.record({
    attrs,
    // Own text only where it is not whitespace alone (that is dropped, as documented).
    text: text.map((t) => (t.trim() === '' ? '' : t)),
    children: fc.array(child, { maxLength: 4 }),
  });

  function xml(records: Rec[]): string {
    const at = (a: [string, string][]) => a.map(([n, v]) => ` ${n}="${esc(v)}"`).join('');
    const body = records
      .map(
        (r) =>
          `<row${at(r.attrs)}>${esc(r.text)}${r.children
            .map((c) => `<${c.name}${at(c.attrs)}>${esc(c.text)}</${c.name}>`)
            .join('')}</row>`,
      )
      .join('\n');
    return `<?xml version="1.0" encoding="UTF-8"?>\n<rows xmlns:x="urn:x" xmlns:p="urn:p">\n${body}\n</rows>\n`;
  }

  function expected(r: Rec): Obj {
    const o: Obj = {};
    for (const [n, v] of r.attrs) o[`@${n}`] = v;
    for (const c of r.children) {
      let v: unknown = c.text;
      if (c.attrs.length > 0) {
        const co: Obj = {};
        for (const [n, val] of c.attrs) co[`@${n}`] = val;
        if (c.text.trim() !== '') co['#text'] = c.text;
        v = co;
      }
      const prev = o[c.name];
      o[c.name] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
    }
    if (r.text !== '') o['#text'] = r.text;
    return o;
  }

  async function read(data: Uint8Array, chunk: number): Promise<ReaderResult> {
    const result = await pool.run({ reader: 'xml', data, chunk });
    expect(await pool.run({ reader: 'xml', data, chunk: 1 << 30 })).toEqual(result);
    return result;
  }

  function checkAny(r: ReaderResult): void {
    for (const row of r.rows) {
      const v = JSON.parse(row[0] ?? '') as unknown;
      expect(typeof v === 'object' && v !== null && !Array.isArray(v)).toBe(true);
    }
    if (r.fatal) {
      expect(r.fatal.name).toBe('FatalReadError');
      expect(r.fatal.message).toMatch(/line \d+|byte offset \d+|DOCTYPE|empty|root element/);
    }
  }

  it(
    'reads generated documents back into exactly their records',
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(rec, { maxLength: 8 }), chunkSize, async (records, chunk) => {
          const r = await read(Buffer.from(xml(records)), chunk);
          expect(r.fatal).toBeNull();
          expect(r.errors).toEqual([]);
          expect(r.rows.map((c) => JSON.parse(c[0] ?? '') as unknown)).toEqual(records.map(expected));
        }),
        fuzzParameters(150),
      );
    },
    FUZZ_TEST_TIMEOUT,
  );

  it(
    'ends corrupted documents in time, at any chunk size, with objects or a clear error',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(rec, { maxLength: 6 }),
          mutations('<>/="&;![]-?'),
          chunkSize,
          async (records, ms, chunk) => {
            const data = applyMutations(Buffer.from(xml(records)), ms);
            try {
              checkAny(await read(data, chunk));
            } catch (err) {
              keep('xml', data, 'xml');
              throw err;
            }
          },
        ),
        fuzzParameters(200),
      );
    },
    FUZZ_TEST_TIMEOUT,
  );

  it('stays bounded on deep nesting, a huge record and entity tricks', async () => {
    const deep = await read(
      Buffer.from(`<rows><row>${'<a>'.repeat(100_000)}${'</a>'.repeat(100_000)}</row></rows>`),
      65536,
    );
    checkAny(deep);
    const huge = await pool.run({
      reader: 'xml',
      data: Buffer.from(`<rows><row>${'x'.repeat(3_000_000)}</row><row>ok</row></rows>`),
      chunk: 65536,
      opts: { maxRecordBytes: 1_000_000 },
    });
    expect(huge.rows.map((c) => c[0])).toEqual(['{"#text":"ok"}']);
    expect(huge.errors.map((e) => e.reason)).toEqual(['record exceeds 1000000 bytes']);
    const bomb = await read(
      Buffer.from('<!DOCTYPE r [<!ENTITY a "aaaaaaaaaa">]><rows><row>&a;&a;</row></rows>'),
      7,
    );
    expect(bomb.fatal?.message).toMatch(/DOCTYPE/);
  }, 120_000);

  it('replays the regression corpus (test/corpora/xml)', async () => {
    const cases = corpus('xml');
    expect(cases.length).toBeGreaterThan(0);
    for (const [name, data] of cases) {
      try {
        checkAny(await read(data, 1));
      } catch (err) {
        throw new Error(`corpus file xml/${name}: ${(err as Error).message}`, { cause: err });
      }
    }
  }, 120_000);
});
