import { Client, PoolClient } from 'pg';
import type { CsvChunkPayload, Payload } from '@tapyard/destinations';
import type { SchemaField } from '@tapyard/model';
import { copyPayloads } from '../libs/destinations/src/postgres/pg-copy';
import { createCsvEncoder } from '../libs/destinations/src/postgres/copy-binary';
import { TEST_DATABASE_URL } from './support/env';

const COLUMNS = [
  { name: 'id', type: 'int' },
  { name: 'label', type: 'string' },
] as SchemaField[];
const NAMES = COLUMNS.map((c) => c.name);

function csvChunk(text: string, rows: number): CsvChunkPayload {
  return {
    kind: 'csv',
    bytes: Buffer.from(text),
    rows,
    line: 1,
    eol: 'lf',
    copyOptions: 'FORMAT csv',
    columns: NAMES,
  };
}

/** The binary pieces of a clean chunk, written for a table that declares `idType` for `id`. */
function binaryPieces(text: string, rows: number, idType: string): Payload[] {
  const shape = { columnTypes: { id: idType, label: 'text' } };
  const encode = createCsvEncoder(COLUMNS, NAMES, { delimiter: ',', quote: '"', escape: null }, shape, 0);
  if (encode === null) throw new Error('the encoder refused the columns');
  return [...encode(csvChunk(text, rows))];
}

async function* all(payloads: Payload[]): AsyncGenerator<Payload> {
  yield* payloads;
}

/**
 * The PostgreSQL loader's binary COPY (copy-binary.ts, pg-copy.ts) against the server: runs of binary
 * pieces among CSV chunks and COPY text, each its own COPY with its header and trailer, and the guard
 * that binary values are never read as a type they were not written for.
 */
describe('PostgreSQL loads of binary COPY', () => {
  let pg: Client;

  beforeAll(async () => {
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
  });

  afterAll(async () => {
    await pg.end();
  });

  it('loads binary runs beside CSV chunks and COPY text, in order, one COPY each', async () => {
    await pg.query('CREATE TEMP TABLE mixed (id bigint, label text)');
    let big = '';
    for (let i = 4; i <= 30_003; i++) big += `${i},"row ""${i}"""\n`;
    const payloads: Payload[] = [
      ...binaryPieces('1,one\n2,\n', 2, 'bigint'),
      csvChunk('3,three\n', 1),
      ...binaryPieces(big, 30_000, 'bigint'),
      '30004\tfour\n',
    ];
    const loaded = await copyPayloads(
      pg as unknown as PoolClient,
      'mixed',
      NAMES,
      all(payloads),
      () => undefined,
    );
    expect(loaded).toBe(30_004);
    const { rows } = await pg.query<{ n: string; wrong: string; nulls: string }>(
      `SELECT count(*) AS n, count(*) FILTER (WHERE id > 3 AND id < 30004 AND label <> format('row "%s"', id)) AS wrong,
              count(*) FILTER (WHERE label IS NULL) AS nulls FROM mixed`,
    );
    expect(rows[0]).toEqual({ n: '30004', wrong: '0', nulls: '1' });
    const firsts = await pg.query(
      'SELECT id::int AS id, label FROM mixed WHERE id IN (1, 3, 30004) ORDER BY id',
    );
    expect(firsts.rows).toEqual([
      { id: 1, label: 'one' },
      { id: 3, label: 'three' },
      { id: 30004, label: 'four' },
    ]);
  });

  it('refuses to load binary values into a column whose type changed since they were written', async () => {
    await pg.query('CREATE TEMP TABLE altered (id integer, label text)');
    // Written for `integer`; the table was altered meanwhile (a bigint would read these 4 bytes wrong).
    const pieces = binaryPieces('1,one\n2,two\n', 2, 'integer');
    await pg.query('ALTER TABLE altered ALTER COLUMN id TYPE bigint');
    await pg.query('BEGIN');
    await expect(
      copyPayloads(pg as unknown as PoolClient, 'altered', NAMES, all(pieces), () => undefined),
    ).rejects.toThrow(/the type of column 'id' of altered changed during the load; it is retried/);
    await pg.query('ROLLBACK');
    expect((await pg.query('SELECT count(*)::int AS n FROM altered')).rows[0]).toEqual({ n: 0 });
    // Written for what the table declares, the same rows load.
    await pg.query('BEGIN');
    const loaded = await copyPayloads(
      pg as unknown as PoolClient,
      'altered',
      NAMES,
      all(binaryPieces('1,one\n2,two\n', 2, 'bigint')),
      () => undefined,
    );
    await pg.query('COMMIT');
    expect(loaded).toBe(2);
    expect((await pg.query('SELECT sum(id)::int AS s FROM altered')).rows[0]).toEqual({ s: 3 });
  });

  it('holds the column types until the transaction ends: ALTER TABLE waits for the load', async () => {
    await pg.query('DROP TABLE IF EXISTS public.binary_held');
    await pg.query('CREATE TABLE public.binary_held (id integer, label text)');
    const other = new Client({ connectionString: TEST_DATABASE_URL });
    await other.connect();
    try {
      await pg.query('BEGIN');
      await copyPayloads(
        pg as unknown as PoolClient,
        'public.binary_held',
        NAMES,
        all(binaryPieces('1,one\n', 1, 'integer')),
        () => undefined,
      );
      await other.query(`SET lock_timeout = '300ms'`);
      await expect(other.query('ALTER TABLE public.binary_held ALTER COLUMN id TYPE bigint')).rejects.toThrow(
        /lock timeout/,
      );
      await pg.query('COMMIT');
      await other.query('ALTER TABLE public.binary_held ALTER COLUMN id TYPE bigint');
    } finally {
      await other.end();
      await pg.query('DROP TABLE IF EXISTS public.binary_held');
    }
  });
});
