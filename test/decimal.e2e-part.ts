import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mongo } from 'mongoose';
import { Client } from 'pg';
import { ParquetReader } from '@dsnp/parquetjs';
import { decimalFromBytes } from '../libs/destinations/src/objectstore/parquet-decimal';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_DATABASE_URL, TEST_MONGODB_URI, TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { upload, waitForJob } from './support/ingest';
import { TestMinio } from './support/minio';
import { parquetRows } from './support/parquet';
import { RestSink } from './support/rest-sink';

/** Parquet's converted type DECIMAL and physical type FIXED_LEN_BYTE_ARRAY (parquet.thrift). */
const PARQUET_DECIMAL = 5;
const FIXED_LEN_BYTE_ARRAY = 7;

/**
 * An orders-like file, the same on every run (a linear congruential generator, no Math.random):
 * unit prices with two places (trailing zeros kept, as exporters write money), quantities, and a
 * line total computed exactly in cents. Returns the CSV and the exact totals, as BigInt cents.
 */
function ordersFile(rows: number): { csv: string; priceCents: bigint; totalCents: bigint } {
  let seed = 27;
  const next = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  const money = (cents: bigint) => `${cents / 100n}.${String(cents % 100n).padStart(2, '0')}`;
  const lines = ['order_id,customer,quantity,unit_price,line_total,ordered_on'];
  let priceCents = 0n;
  let totalCents = 0n;
  for (let i = 1; i <= rows; i++) {
    // Up to 99,999.99: single precision keeps about 7 digits, so these sums drift in real.
    const unit = BigInt(next(9_999_999) + 1);
    const quantity = BigInt(next(20) + 1);
    priceCents += unit;
    totalCents += unit * quantity;
    const day = String((i % 28) + 1).padStart(2, '0');
    lines.push(
      `${i},customer-${next(5000)},${quantity},${money(unit)},${money(unit * quantity)},2026-11-${day}`,
    );
  }
  return { csv: `${lines.join('\n')}\n`, priceCents, totalCents };
}

const asDecimal = (cents: bigint) => {
  const neg = cents < 0n;
  const a = neg ? -cents : cents;
  return `${neg ? '-' : ''}${a / 100n}.${String(a % 100n).padStart(2, '0')}`;
};
const cents = (text: string) => BigInt(text.replace('.', ''));

/**
 * Money stays exact end to end: generate proposes decimal for a 50k-row orders file, and PostgreSQL,
 * the object store (Parquet DECIMAL), a REST sink (JSON strings) and MongoDB (FerretDB: exact text)
 * hold every cent.
 */
describe('decimal: exact money through generate, PostgreSQL, Parquet, a sink and MongoDB', () => {
  const env = uniqueEnvironment('dec');
  const table = `orders_${env.replace(/[^a-z0-9]/g, '_')}`.slice(0, 60);
  const mongoDb = `tapyard_test_${env.replace(/[^a-z0-9]/g, '_')}`.slice(0, 60);
  const sink = new RestSink();
  const file = ordersFile(50_000);
  let api: TestApi;
  let worker: TestWorker;
  let pg: Client;
  let minio: TestMinio;

  beforeAll(async () => {
    await sink.start();
    const flags = {
      TAPYARD_ENV: env,
      ...TEST_OBJECT_STORE,
      MONGODB_URI: TEST_MONGODB_URI,
      REST_SINK_ALLOW: `127.0.0.1:${sink.port}`,
    };
    api = await startApi(flags);
    worker = await startWorker(flags);
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    minio = new TestMinio();
  }, 60_000);
  afterAll(async () => {
    await pg
      .query(
        `DROP TABLE IF EXISTS public.${table}, public.${table}_rejects, public.${table}_fast, public.${table}_fast_rejects`,
      )
      .catch(() => undefined);
    await pg.end();
    const client = await new mongo.MongoClient(TEST_MONGODB_URI).connect();
    await client.db(mongoDb).dropDatabase();
    await client.close();
    await worker.close();
    await api.close();
    await sink.stop();
  });

  let proposal: {
    name: string;
    source: {
      schemaProperties: { fields: { name: string; type: string; precision?: number; scale?: number }[] };
    };
    destination: { database: Record<string, unknown> };
    typeNotes?: { column: string; type: string; reason: string; outliers: number }[];
  };

  it('generate proposes decimal(18,2) for money, never float, and says why', async () => {
    const res = await api.http
      .post('/api/v1/pipeline/generate')
      .field('pipeline', table)
      .attach('file', Buffer.from(file.csv), 'orders.csv')
      .expect(200);
    proposal = res.body;
    expect(proposal.source.schemaProperties.fields).toEqual([
      { name: 'order_id', type: 'int' },
      { name: 'customer', type: 'string' },
      { name: 'quantity', type: 'int' },
      { name: 'unit_price', type: 'decimal', precision: 18, scale: 2 },
      { name: 'line_total', type: 'decimal', precision: 18, scale: 2 },
      { name: 'ordered_on', type: 'date' },
    ]);
    expect(proposal.typeNotes?.map((n) => [n.column, n.type, n.outliers])).toEqual([
      ['unit_price', 'decimal', 0],
      ['line_total', 'decimal', 0],
    ]);
    expect(proposal.typeNotes?.[0].reason).toMatch(/2 places after the point .*decimal keeps them exact/);
  });

  it('loads 50k rows into PostgreSQL numeric(18,2), Parquet DECIMAL and a sink, every cent kept', async () => {
    // The proposal registers as is (its typeNotes included), with two more destinations.
    const config = {
      ...proposal,
      destination: {
        ...proposal.destination,
        objectStore: { prefix: `exports/${table}`, format: 'parquet' },
        rest: { url: `http://127.0.0.1:${sink.port}/orders`, batchSize: 5000 },
      },
    };
    await api.http.post('/api/v1/pipeline').send(config).expect(200);
    const token = await upload(api.http, table, file.csv, 'orders.csv');
    const { rollup } = await waitForJob(api.http, token, 300_000);
    expect(rollup.status).toBe('success');

    const columns = await pg.query(
      `SELECT column_name, data_type, numeric_precision, numeric_scale FROM information_schema.columns
       WHERE table_schema = 'public' AND table_name = $1 AND column_name IN ('unit_price', 'line_total')
       ORDER BY column_name`,
      [table],
    );
    expect(columns.rows).toEqual([
      { column_name: 'line_total', data_type: 'numeric', numeric_precision: 18, numeric_scale: 2 },
      { column_name: 'unit_price', data_type: 'numeric', numeric_precision: 18, numeric_scale: 2 },
    ]);
    const sums = await pg.query(
      `SELECT count(*)::int AS n, sum(unit_price)::text AS price, sum(line_total)::text AS total FROM public.${table}`,
    );
    expect(sums.rows[0]).toEqual({
      n: 50_000,
      price: asDecimal(file.priceCents),
      total: asDecimal(file.totalCents),
    });

    // Parquet: a DECIMAL(18,2) column, read back with the project's reader.
    const bucket = `${env}-output`;
    const local = join(mkdtempSync(join(tmpdir(), 'dec-')), 'part.parquet');
    writeFileSync(local, await minio.read(bucket, `exports/${table}/job=${token}/part-00000.parquet`));
    const reader = await ParquetReader.openFile(local);
    const element = reader.metadata?.schema.find((e) => e.name === 'line_total');
    // 18 digits fit 8 bytes of two's complement (what Spark and pyarrow write for decimal(18,2)).
    expect(element).toMatchObject({
      type: FIXED_LEN_BYTE_ARRAY,
      type_length: 8,
      converted_type: PARQUET_DECIMAL,
      precision: 18,
      scale: 2,
    });
    await reader.close();
    const rows = await parquetRows(local);
    expect(rows).toHaveLength(50_000);
    expect(rows.reduce((sum, r) => sum + cents(decimalFromBytes(r.line_total as Buffer, 2)), 0n)).toBe(
      file.totalCents,
    );

    // The sink: every value a JSON string, exactly as the file wrote it.
    const sent = sink.rows('/orders');
    expect(sent).toHaveLength(50_000);
    expect(sent.every((row) => typeof row.line_total === 'string')).toBe(true);
    expect(sent.reduce((sum, row) => sum + cents(row.line_total as string), 0n)).toBe(file.totalCents);
    const firstLine = file.csv.split('\n')[1].split(',');
    expect(sent.find((row) => row.order_id === 1)).toMatchObject({ unit_price: firstLine[3] });
  }, 360_000);

  it('takes the CSV fast path into numeric(18,2), and a value beyond the scale in a chunk still goes to rejects', async () => {
    const name = `${table}_fast`;
    await api.http
      .post('/api/v1/pipeline')
      .send({
        ...proposal,
        name,
        destination: { database: { ...proposal.destination.database, table: name } },
      })
      .expect(200);
    const bad = '50001,z,1,12.345,12.35,2026-11-01\n';
    const token = await upload(api.http, name, file.csv + bad, 'orders.csv');
    const { rollup, events } = await waitForJob(api.http, token, 300_000);
    expect(rollup.status).toBe('warning');
    const end = events.find((e) => e.processName === 'DataQuality' && e.state === 'end')?.description ?? '';
    const unparsed = Number(/(\d+) of them went to the destination unparsed/.exec(end)?.[1] ?? 0);
    expect(unparsed).toBeGreaterThan(40_000);
    const sums = await pg.query(
      `SELECT count(*)::int AS n, sum(line_total)::text AS total FROM public.${name}`,
    );
    expect(sums.rows[0]).toEqual({ n: 50_000, total: asDecimal(file.totalCents) });
    const rejects = await pg.query(`SELECT line::int, reason FROM public.${name}_rejects`);
    expect(rejects.rows).toEqual([
      {
        line: 50_002,
        reason:
          "column 'unit_price': '12.345' has 3 digits after the decimal point, more than the scale 2 allows (the column is decimal(18,2))",
      },
    ]);
  }, 360_000);

  it('rejects a value beyond the scale or precision, naming the limit, never rounding it', async () => {
    const token = await upload(
      api.http,
      table,
      'order_id,customer,quantity,unit_price,line_total,ordered_on\n' +
        '1,a,1,12.345,12.35,2026-11-01\n' +
        '2,b,1,1e3,1000.00,2026-11-01\n' +
        '3,c,1,12345678901234567.00,1.00,2026-11-01\n' +
        '4,d,2,0.10,0.20,2026-11-01\n',
      'bad.csv',
    );
    const { rollup } = await waitForJob(api.http, token);
    expect(rollup.status).toBe('warning');
    const rejects = await pg.query(
      `SELECT line::int, reason FROM public.${table}_rejects WHERE pipeline_token = $1 ORDER BY line`,
      [token],
    );
    expect(rejects.rows).toEqual([
      {
        line: 2,
        reason:
          "column 'unit_price': '12.345' has 3 digits after the decimal point, more than the scale 2 allows (the column is decimal(18,2))",
      },
      {
        line: 3,
        reason:
          "column 'unit_price': '1e3' is not a decimal (expected digits with an optional sign and at most one decimal point, no exponent)",
      },
      {
        line: 4,
        reason:
          "column 'unit_price': '12345678901234567.00' has 17 digits before the decimal point, more than the 16 allowed (the column is decimal(18,2))",
      },
    ]);
  });

  it('checks precision and scale: only on decimals, scale within precision, a 400 naming the path', async () => {
    const config = (field: Record<string, unknown>) => ({
      name: `${table}_bad`,
      source: { fileAttributes: { format: 'csv' }, schemaProperties: { fields: [{ name: 'x', ...field }] } },
      destination: {
        database: { dbName: 'tapyard_test', schema: 'public', table: `${table}_bad`, usePostgres: true },
      },
    });
    const refused = async (field: Record<string, unknown>) =>
      (await api.http.post('/api/v1/pipeline').send(config(field)).expect(400)).body as {
        message: string;
        details?: { field: string; problem: string }[];
      };
    expect((await refused({ type: 'int', precision: 10 })).details).toContainEqual({
      field: 'source.schemaProperties.fields[0].precision',
      problem: 'applies to decimal fields only, not int',
    });
    expect((await refused({ type: 'decimal', scale: 2 })).details).toContainEqual({
      field: 'source.schemaProperties.fields[0].scale',
      problem: 'needs a precision',
    });
    expect((await refused({ type: 'decimal', precision: 4, scale: 6 })).details).toContainEqual({
      field: 'source.schemaProperties.fields[0].scale',
      problem: 'must be at most the precision (4)',
    });
    expect((await refused({ type: 'decimal', precision: 1001 })).message).toMatch(/precision/);
    expect((await refused({ type: 'decimal', precision: 2.5 })).message).toMatch(/precision/);
    // Clients that know only the spec's eight types are unaffected; a bare decimal has no limit.
    await api.http
      .post('/api/v1/pipeline')
      .send(config({ type: 'decimal' }))
      .expect(200);
    const stored = await api.http
      .get('/api/v1/pipeline')
      .query({ pipeline: `${table}_bad` })
      .expect(200);
    expect(stored.body.source.schemaProperties.fields).toEqual([{ name: 'x', type: 'decimal' }]);
  });

  it('stores exact decimals in MongoDB: FerretDB has no Decimal128, so as their text', async () => {
    const fields = proposal.source.schemaProperties.fields;
    await api.http
      .post('/api/v1/pipeline')
      .send({
        name: `${table}_m`,
        source: { fileAttributes: { format: 'csv' }, schemaProperties: { fields } },
        destination: {
          database: { dbName: mongoDb, schema: 'ignored', table: 'orders', usePostgres: false },
        },
      })
      .expect(200);
    const small = ordersFile(500);
    const token = await upload(api.http, `${table}_m`, small.csv, 'orders.csv');
    expect((await waitForJob(api.http, token)).rollup.status).toBe('success');
    const client = await new mongo.MongoClient(TEST_MONGODB_URI).connect();
    try {
      const docs = await client.db(mongoDb).collection('orders').find({}).toArray();
      expect(docs).toHaveLength(500);
      expect(docs.every((d) => typeof d.line_total === 'string' && /^\d+\.\d{2}$/.test(d.line_total))).toBe(
        true,
      );
      expect(docs.reduce((sum, d) => sum + cents(d.line_total as string), 0n)).toBe(small.totalCents);
    } finally {
      await client.close();
    }
  });
});
