import fc from 'fast-check';
import { ReaderPool, ReaderResult } from './support/reader-pool';
import { PostgresCsv } from './support/postgres-csv';
import { FUZZ_TEST_TIMEOUT, corpus, fuzzParameters, keep } from './support/fuzz-options';
import { applyMutations, chunkSize, mutations } from './support/mutate';

/**
 * Differential fuzzing of the CSV reader against PostgreSQL's own CSV import (real local server).
 * Valid files read exactly as PostgreSQL reads them, NULLs included (an unquoted empty field is
 * NULL, `""` the empty string). Corrupted files end within 10 s, give the same result at any chunk
 * size, keep every row at the file's width, and where PostgreSQL accepts a corrupted file without
 * quotes or blank lines, read as it does or report the rows they could not read.
 */
describe('CSV reader fuzz (differential against PostgreSQL COPY … CSV)', () => {
  const pool = new ReaderPool();
  const pg = new PostgresCsv();
  afterAll(async () => {
    await pool.close();
    await pg.close();
  });

  const unit = fc.constantFrom('a', 'b', 'Z', ' ', ',', '"', '\n', '\r', '\t', '\\', '.', 'é', '😀', '0');
  const value = fc.option(fc.string({ unit, maxLength: 6 }), { freq: 4 });
  const table = fc.integer({ min: 1, max: 5 }).chain((width) =>
    fc.tuple(
      fc.constant(width),
      fc.array(fc.array(fc.tuple(value, fc.boolean()), { minLength: width, maxLength: width }), {
        maxLength: 8,
      }),
      fc.boolean(),
    ),
  );

  /** CSV text of the rows: quoted when needed (or by chance), null as an unquoted empty field. */
  function encode(width: number, rows: [string | null, boolean][][], finalNewline: boolean): Buffer {
    const field = ([v, quoteAnyway]: [string | null, boolean]): string => {
      if (v === null) return '';
      const needs =
        v === '' ||
        /[,"\r\n]/.test(v) ||
        // One column: a blank or `\.` line means something else to one reader or the other.
        (width === 1 && (/^[ \t]*$/.test(v) || v === '\\.'));
      return needs || quoteAnyway ? `"${v.replaceAll('"', '""')}"` : v;
    };
    const lines = rows.map((r) => (width === 1 && r[0][0] === null ? '""' : r.map(field).join(',')));
    return Buffer.from(lines.join('\n') + (finalNewline && lines.length > 0 ? '\n' : ''));
  }

  async function read(data: Uint8Array, chunk: number): Promise<ReaderResult> {
    const result = await pool.run({ reader: 'csv', data, chunk });
    expect(await pool.run({ reader: 'csv', data, chunk: 1 << 30 })).toEqual(result);
    return result;
  }

  it(
    'reads valid files exactly as PostgreSQL does',
    async () => {
      await fc.assert(
        fc.asyncProperty(table, chunkSize, async ([width, rows, nl], chunk) => {
          const data = encode(width, rows, nl);
          const r = await read(data, chunk);
          if (rows.length === 0) {
            expect(r.fatal?.message).toBe('the file is empty');
            return;
          }
          const ref = await pg.read(data, width);
          expect(ref).toHaveProperty('rows');
          expect(r.fatal).toBeNull();
          expect(r.errors).toEqual([]);
          expect(r.rows).toEqual((ref as { rows: unknown }).rows);
        }),
        fuzzParameters(150),
      );
    },
    FUZZ_TEST_TIMEOUT,
  );

  /** What holds for any input; `clean` is the file before corruption, when there was one. */
  async function checkCorrupted(data: Buffer, r: ReaderResult, clean: Buffer | null): Promise<void> {
    if (r.fatal) {
      expect(r.fatal.name).toBe('FatalReadError');
      return;
    }
    const width = r.rows[0]?.length;
    for (const row of r.rows) expect(row).toHaveLength(width ?? 0);
    const lines = data.toString('latin1').split(/\r\n|\r|\n/).length;
    for (const e of r.errors) {
      expect(e.reason.length).toBeGreaterThan(0);
      expect(e.line).toBeGreaterThanOrEqual(1);
      expect(e.line).toBeLessThanOrEqual(lines);
    }
    if (clean === null || width === undefined || r.errors.length > 0) return;
    // Two documented differences from PostgreSQL: a quote inside an unquoted field is literal here
    // (it opens a quoted section there), and blank lines are skipped here. Compare where neither
    // can arise; quoting is held to PostgreSQL by the valid-file property.
    if (data.includes(0x22) || /(^|[\r\n])[ \t]*([\r\n]|$)/.test(data.toString('latin1'))) return;
    const ref = await pg.read(data, width);
    if ('rows' in ref) expect(r.rows).toEqual(ref.rows);
  }

  it(
    'ends corrupted files in time, at any chunk size, as PostgreSQL reads them or with row errors',
    async () => {
      await fc.assert(
        fc.asyncProperty(table, mutations(',"\n\r \t'), chunkSize, async ([width, rows, nl], ms, chunk) => {
          const clean = encode(width, rows, nl);
          const data = applyMutations(clean, ms);
          try {
            await checkCorrupted(data, await read(data, chunk), clean);
          } catch (err) {
            keep('csv', data, 'csv');
            throw err;
          }
        }),
        fuzzParameters(200),
      );
    },
    FUZZ_TEST_TIMEOUT,
  );

  it('stays bounded on a huge field and an unterminated quote', async () => {
    const huge = await pool.run({
      reader: 'csv',
      data: Buffer.from(`a,"${'x'.repeat(3_000_000)}"\nb,c\n`),
      chunk: 65536,
      opts: { maxFieldBytes: 1_000_000 },
    });
    expect(huge.rows).toEqual([['b', 'c']]);
    expect(huge.errors.map((e) => e.reason)).toEqual(['field 2 exceeds 1000000 bytes']);
    const open = await pool.run({
      reader: 'csv',
      data: Buffer.from(`a,b\nc,"${'y\n'.repeat(100_000)}`),
      chunk: 65536,
    });
    expect(open.errors.map((e) => e.reason)).toEqual(['unterminated quoted field starting at line 2']);
  }, 120_000);

  it('replays the regression corpus (test/corpora/csv)', async () => {
    const cases = corpus('csv');
    expect(cases.length).toBeGreaterThan(0);
    for (const [name, data] of cases) {
      try {
        await checkCorrupted(data, await read(data, 1), null);
      } catch (err) {
        throw new Error(`corpus file csv/${name}: ${(err as Error).message}`, { cause: err });
      }
    }
  }, 120_000);
});
