import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ObjectStoreDestination } from '@tapyard/destinations';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { expectSecondDeliveryWritesNothing } from './support/destinations';
import { upload, waitForJob } from './support/ingest';
import { TestMinio } from './support/minio';
import { parquetRows } from './support/parquet';

/** Loads written as files into the object store (real MinIO): Parquet, CSV, JSON Lines. */
describe('object-store destination (SparkObjectStoreLoader)', () => {
  const env = uniqueEnvironment('osd');
  let api: TestApi;
  let worker: TestWorker;
  let minio: TestMinio;

  const fields = [
    { name: 'id', type: 'int' },
    { name: 'big', type: 'bigint' },
    { name: 'name', type: 'string' },
    { name: 'price', type: 'double' },
    { name: 'ok', type: 'boolean' },
    { name: 'day', type: 'date' },
  ];
  const CSV =
    'id,big,name,price,ok,day\n1,9007199254740993,"Pen, blue",1.5,true,2026-11-01\n2,,Ink,,no,\nx,1,bad,1,true,2026-11-02\n';
  const pipeline = (name: string, format?: string, extra: Record<string, unknown> = {}) => ({
    name,
    source: {
      fileAttributes: { csvAttributes: { delimiter: ',', header: true } },
      schemaProperties: { fields },
    },
    destination: { objectStore: { prefix: `exports/${name}`, ...(format ? { format } : {}), ...extra } },
  });
  const read = (bucket: string, key: string) => minio.read(bucket, key);
  const keys = (bucket: string, prefix: string) => minio.keys(bucket, prefix);

  beforeAll(async () => {
    api = await startApi({ TAPYARD_ENV: env, ...TEST_OBJECT_STORE });
    worker = await startWorker({ TAPYARD_ENV: env, ...TEST_OBJECT_STORE });
    minio = new TestMinio();
  });
  afterAll(async () => {
    await worker.close();
    await api.close();
  });

  it('writes Parquet (the default) under <prefix>/job=<token>/, with rejects and a _SUCCESS marker', async () => {
    await api.http.post('/api/v1/pipeline').send(pipeline('parq')).expect(200);
    const token = await upload(api.http, 'parq', `${CSV}5,42,Pad,2.25,yes,2026-11-03\n`, 'sales.csv');
    const { rollup, events } = await waitForJob(api.http, token);
    expect(rollup.status).toBe('warning');
    expect(events.some((e) => e.processName === 'SparkObjectStoreLoader' && e.state === 'end')).toBe(true);
    const bucket = `${env}-output`;
    const dir = `exports/parq/job=${token}`;
    expect(await keys(bucket, 'exports/parq/')).toEqual([
      `${dir}/_SUCCESS`,
      `${dir}/_rejects.jsonl`,
      `${dir}/part-00000.parquet`,
    ]);
    expect(JSON.parse((await read(bucket, `${dir}/_SUCCESS`)).toString())).toEqual({
      loaded: 3,
      rejected: 1,
    });
    const rejects = (await read(bucket, `${dir}/_rejects.jsonl`)).toString();
    expect(rejects).toMatch(/"line":4/);

    const local = join(mkdtempSync(join(tmpdir(), 'osd-')), 'part.parquet');
    writeFileSync(local, await read(bucket, `${dir}/part-00000.parquet`));
    const rows = await parquetRows(local);
    expect(rows).toHaveLength(3);
    // INT64 to the digit: a bigint beyond 2^53 is stored exactly, not rounded through a double.
    expect(rows[0]).toMatchObject({ id: 1, big: 9007199254740993n, name: 'Pen, blue', price: 1.5, ok: true });
    expect(rows[0].day).toEqual(new Date('2026-11-01T00:00:00Z'));
    expect(rows[1]).toMatchObject({ id: 2, name: 'Ink', ok: false });
    expect(rows[1].price ?? null).toBeNull();
    expect(rows[1].big ?? null).toBeNull();
    expect(rows[2]).toMatchObject({ id: 5, big: 42n, name: 'Pad', price: 2.25, ok: true });
    expect(rows[2].day).toEqual(new Date('2026-11-03T00:00:00Z'));
  });

  it('writes CSV and JSON Lines on request, exact to the digit', async () => {
    await api.http.post('/api/v1/pipeline').send(pipeline('as_csv', 'csv')).expect(200);
    await api.http.post('/api/v1/pipeline').send(pipeline('as_jsonl', 'jsonl')).expect(200);
    const t1 = await upload(api.http, 'as_csv', CSV, 'a.csv');
    const t2 = await upload(api.http, 'as_jsonl', CSV, 'a.csv');
    await waitForJob(api.http, t1);
    await waitForJob(api.http, t2);
    const bucket = `${env}-output`;
    expect((await read(bucket, `exports/as_csv/job=${t1}/part-00000.csv`)).toString()).toBe(
      'id,big,name,price,ok,day\n1,9007199254740993,"Pen, blue",1.5,true,2026-11-01T00:00:00.000Z\n2,,Ink,,false,\n',
    );
    const lines = (await read(bucket, `exports/as_jsonl/job=${t2}/part-00000.jsonl`))
      .toString()
      .trim()
      .split('\n');
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      {
        id: 1,
        big: '9007199254740993',
        name: 'Pen, blue',
        price: 1.5,
        ok: true,
        day: '2026-11-01T00:00:00.000Z',
      },
      { id: 2, big: null, name: 'Ink', price: null, ok: false, day: null },
    ]);
  });

  it('a second delivery of a committed job writes nothing; deleteData removes the prefix', async () => {
    const dest = api.app.get(ObjectStoreDestination);
    const target = {
      environment: env,
      pipeline: 'as_jsonl',
      destination: { objectStore: { bucket: null, prefix: 'exports/again', format: 'jsonl' as const } },
      columns: [{ name: 'n', type: 'int' as const }],
      pipelineToken: `redelivered-${env}`,
    };
    await expectSecondDeliveryWritesNothing(dest, target, [[1], [2]]);

    await api.http.delete('/api/v1/pipeline').query({ pipeline: 'as_csv', deleteData: 'true' }).expect(200);
    expect(await keys(`${env}-output`, 'exports/as_csv/')).toEqual([]);
    expect((await keys(`${env}-output`, 'exports/as_jsonl/')).length).toBeGreaterThan(0);
  });

  it('validates the destination section', async () => {
    const unknown = await api.http
      .post('/api/v1/pipeline')
      .send({
        ...pipeline('unknown'),
        destination: { objectStore: { prefix: 'x' }, warehouse: { table: 't' } },
      })
      .expect(400);
    expect(JSON.stringify(unknown.body)).toMatch(/warehouse should not exist/);
    await api.http
      .post('/api/v1/pipeline')
      .send(pipeline('bad_prefix', 'parquet', { prefix: '../up' }))
      .expect(400);
    await api.http.post('/api/v1/pipeline').send(pipeline('bad_format', 'orc')).expect(400);
    const none = await api.http
      .post('/api/v1/pipeline')
      .send({ ...pipeline('none'), destination: {} })
      .expect(400);
    expect(none.body.message).toMatch(/needs at least one of: database, objectStore, vectorStore/);
  });
});
