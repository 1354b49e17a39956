import { Client } from 'pg';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_DATABASE_URL, uniqueEnvironment } from './support/env';
import { RollupAnswer, csvPipeline, upload, waitForJob } from './support/ingest';

/**
 * The pipeline's schema contract (`schemaContract`) against a header typo, `unit_prise` for
 * `unit_price`, through the real API, worker and PostgreSQL. Pipelines without rules read uploads on
 * the CSV fast path; one with a rule reads them on the validating path: both must honour the contract.
 */
describe('schema contract (real Postgres and Redis)', () => {
  const env = uniqueEnvironment('contract');
  const schema = 'ingest_test';
  const FIELDS: [string, string][] = [
    ['order_id', 'int'],
    ['product', 'string'],
    ['quantity', 'int'],
    ['unit_price', 'double'],
  ];
  const GOOD = 'order_id,product,quantity,unit_price\n1,tea,2,3.5\n2,milk,1,1.25\n';
  const TYPO = 'order_id,product,quantity,unit_prise\n3,sugar,4,0.99\n4,salt,1,\n';
  let api: TestApi;
  let worker: TestWorker;
  let pg: Client;

  const table = (name: string) => `${name}_${env.replace(/[^a-z0-9]/g, '_')}`;
  async function pipeline(name: string, extra: Record<string, unknown>): Promise<void> {
    await api.http
      .post('/api/v1/pipeline')
      .send({ ...csvPipeline(name, table(name), FIELDS), ...extra })
      .expect(200);
    expect((await waitForJob(api.http, await upload(api.http, name, GOOD))).rollup.status).toBe('success');
  }
  async function stored(
    name: string,
  ): Promise<{ version: number; fields: string[]; schemaContract?: string }> {
    const def = (await api.http.get('/api/v1/pipeline').query({ pipeline: name }).expect(200)).body as {
      version: number;
      schemaContract?: string;
      source: { schemaProperties: { fields: { name: string }[] } };
    };
    return {
      version: def.version,
      fields: def.source.schemaProperties.fields.map((f) => f.name),
      schemaContract: def.schemaContract,
    };
  }
  async function columns(name: string): Promise<string[]> {
    const res = await pg.query(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2
       ORDER BY ordinal_position`,
      [schema, table(name)],
    );
    return res.rows.map((r: { column_name: string }) => r.column_name);
  }
  async function rows(name: string): Promise<Record<string, unknown>[]> {
    return (await pg.query(`SELECT * FROM ${schema}."${table(name)}" ORDER BY order_id`)).rows;
  }
  const jobEnd = (answer: RollupAnswer) =>
    answer.events.find((e) => e.processName === 'JobRunner' && e.state === 'end')?.description ?? '';

  beforeAll(async () => {
    api = await startApi({ TAPYARD_ENV: env });
    worker = await startWorker({ TAPYARD_ENV: env });
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
  });
  afterAll(async () => {
    await pg.end();
    await worker.close();
    await api.close();
  });

  it('rejects an unknown schemaContract value with a 400 naming the field', async () => {
    const res = await api.http
      .post('/api/v1/pipeline')
      .send({ ...csvPipeline('badcontract', table('badcontract'), FIELDS), schemaContract: 'lenient' })
      .expect(400);
    expect(JSON.stringify(res.body)).toMatch(/schemaContract/);
  });

  it('evolve (the default): the column is added, and the job ends warning naming it', async () => {
    await pipeline('evolve', {});
    expect((await stored('evolve')).schemaContract).toBeUndefined();
    const answer = await waitForJob(api.http, await upload(api.http, 'evolve', TYPO));
    expect(answer.rollup.status).toBe('warning');
    expect(answer.rollup.jobs[0].status).toBe('warning');
    expect(jobEnd(answer)).toMatch(/new columns added to the schema.*'evolve'.*: unit_prise$/);
    expect(await stored('evolve')).toMatchObject({
      version: 2,
      fields: ['order_id', 'product', 'quantity', 'unit_price', 'unit_prise'],
    });
    expect(await columns('evolve')).toContain('unit_prise');
    expect((await rows('evolve')).map((r) => [r.order_id, r.unit_price, r.unit_prise])).toEqual([
      [1, 3.5, null],
      [2, 1.25, null],
      [3, null, '0.99'],
      [4, null, null],
    ]);
    // The next file with the same header adds nothing: a plain success.
    const again = await waitForJob(api.http, await upload(api.http, 'evolve', TYPO));
    expect(again.rollup.status).toBe('success');
  });

  it('freeze: the job is refused naming the added and the missing column; nothing changes', async () => {
    await pipeline('freeze', { schemaContract: 'freeze' });
    expect((await stored('freeze')).schemaContract).toBe('freeze');
    const before = await columns('freeze');
    const answer = await waitForJob(api.http, await upload(api.http, 'freeze', TYPO));
    expect(answer.rollup.status).toBe('error');
    expect(answer.rollup.jobs[0].lastError).toEqual({
      processName: 'DataQuality',
      description: expect.stringMatching(/'freeze'.*added unit_prise; missing unit_price$/),
    });
    expect(await stored('freeze')).toMatchObject({
      version: 1,
      fields: ['order_id', 'product', 'quantity', 'unit_price'],
    });
    expect(await columns('freeze')).toEqual(before);
    expect((await rows('freeze')).map((r) => r.order_id)).toEqual([1, 2]);
    // A file missing a column differs too.
    const short = await waitForJob(
      api.http,
      await upload(api.http, 'freeze', 'order_id,product,quantity\n5,rice,1\n'),
    );
    expect(short.rollup.jobs[0].lastError?.description).toMatch(/missing unit_price$/);
    expect((await rows('freeze')).map((r) => r.order_id)).toEqual([1, 2]);
  });

  it.each([
    ['the fast path', 'discard_fast', {}],
    [
      'the validating path',
      'discard_checked',
      { dataQuality: { rules: [{ type: 'not_null', column: 'order_id' }] } },
    ],
  ])(
    'discard_columns on %s: the column is dropped, the job ends warning naming it',
    async (_, name, extra) => {
      await pipeline(name, { schemaContract: 'discard_columns', ...extra });
      const before = await columns(name);
      const answer = await waitForJob(api.http, await upload(api.http, name, TYPO));
      expect(answer.rollup.status).toBe('warning');
      expect(jobEnd(answer)).toMatch(
        /^warning: 2 loaded.*; 0 rejected; columns not in the schema dropped.*: unit_prise$/,
      );
      expect(await columns(name)).toEqual(before);
      expect(await stored(name)).toMatchObject({ version: 1 });
      expect((await rows(name)).map((r) => [r.order_id, r.product, r.unit_price])).toEqual([
        [1, 'tea', 3.5],
        [2, 'milk', 1.25],
        [3, 'sugar', null],
        [4, 'salt', null],
      ]);
    },
  );

  it('discard_rows: rows with a value in the unknown column are field-level rejects', async () => {
    await pipeline('discard_rows', { schemaContract: 'discard_rows' });
    const token = await upload(api.http, 'discard_rows', TYPO);
    const answer = await waitForJob(api.http, token);
    expect(answer.rollup.status).toBe('warning');
    expect(await stored('discard_rows')).toMatchObject({ version: 1 });
    expect(await columns('discard_rows')).not.toContain('unit_prise');
    // Row 4 has no value in unit_prise: it loads; row 3 has one: it is kept in the rejects.
    expect((await rows('discard_rows')).map((r) => r.order_id)).toEqual([1, 2, 4]);
    const rejects = await pg.query(
      `SELECT line, stage, reason, raw FROM ${schema}."${table('discard_rows')}_rejects" WHERE pipeline_token = $1`,
      [token],
    );
    expect(rejects.rows).toEqual([
      {
        line: '2',
        stage: 'DataQuality',
        reason: "column 'unit_prise' is not in the pipeline schema (schema contract 'discard_rows')",
        raw: '3,sugar,4,0.99',
      },
    ]);
  });

  it.each(['evolve', 'freeze', 'discard_columns', 'discard_rows'])(
    'a header of mostly unknown columns is refused as a likely wrong file (%s)',
    async (contract) => {
      const name = `wrong_${contract}`;
      await pipeline(name, { schemaContract: contract });
      const answer = await waitForJob(
        api.http,
        await upload(api.http, name, 'order_id,customer,email,city\n9,Ada,ada@example.com,London\n'),
      );
      expect(answer.rollup.status).toBe('error');
      expect(answer.rollup.jobs[0].lastError?.description).toMatch(
        /looks like another file: 3 of its 4 columns \(customer, email, city\).*lacks 3 of the schema's 4 \(product, quantity, unit_price\)/,
      );
      expect(await stored(name)).toMatchObject({ version: 1 });
      expect((await rows(name)).map((r) => r.order_id)).toEqual([1, 2]);
    },
  );
});
