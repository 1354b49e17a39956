import { TestApi, startApi } from './support/apps';
import { csvPipeline } from './support/ingest';

describe('pipelines API (real Postgres)', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startApi();
  });
  afterAll(() => api.close());

  it('creates, reads, versions, lists and deletes a pipeline', async () => {
    const cfg = csvPipeline('orders', 'orders', [
      ['id', 'bigint'],
      ['amount', 'double'],
    ]);
    expect((await api.http.post('/api/v1/pipeline').send(cfg).expect(200)).body).toEqual({
      status: 'ok',
      name: 'orders',
      version: 1,
    });
    // Same definition again: no new version.
    expect((await api.http.post('/api/v1/pipeline').send(cfg).expect(200)).body.version).toBe(1);
    const changed = { ...cfg, catalog: 'finance' };
    expect((await api.http.post('/api/v1/pipeline').send(changed).expect(200)).body.version).toBe(2);

    const got = (await api.http.get('/api/v1/pipeline').query({ pipeline: 'orders' }).expect(200)).body;
    expect(got).toMatchObject({
      name: 'orders',
      catalog: 'finance',
      version: 2,
      source: {
        fileAttributes: {
          format: 'csv',
          csvAttributes: { delimiter: ',', header: true, quote: '"', escape: '"', encoding: 'utf-8' },
        },
        schemaProperties: {
          fields: [
            { name: 'id', type: 'bigint' },
            { name: 'amount', type: 'double' },
          ],
        },
      },
      destination: {
        database: { dbName: 'tapyard_test', schema: 'ingest_test', table: 'orders', usePostgres: true },
      },
      dataQuality: { rules: [], aiInstruction: null },
      transformation: { mappings: [], aiInstruction: null },
    });

    const list = (await api.http.get('/api/v1/pipelines').expect(200)).body;
    expect(list).toEqual([
      {
        name: 'orders',
        catalog: 'finance',
        sourceType: 'csv',
        destinations: ['postgres'],
        version: 2,
        updatedAt: expect.any(String),
      },
    ]);

    expect(
      (await api.http.delete('/api/v1/pipeline').query({ pipeline: 'orders' }).expect(200)).body,
    ).toEqual({
      status: 'ok',
      pipeline: 'orders',
      dataDeleted: false,
      dropped: [],
      skipped: [],
    });
    const gone = await api.http.get('/api/v1/pipeline').query({ pipeline: 'orders' }).expect(404);
    expect(gone.body.message).toBe("pipeline 'orders' does not exist");
  });

  it('rejects invalid configurations with a 400 naming the field', async () => {
    const badType = csvPipeline('bad', 'bad', [['id', 'integer']]);
    const r1 = await api.http.post('/api/v1/pipeline').send(badType).expect(400);
    expect(JSON.stringify(r1.body.details)).toContain('type');

    const dup = csvPipeline('bad', 'bad', [
      ['id', 'int'],
      ['id', 'string'],
    ]);
    const r2 = await api.http.post('/api/v1/pipeline').send(dup).expect(400);
    expect(r2.body.message).toMatch(/duplicate name 'id'/);

    const badRule = csvPipeline('bad', 'bad', [['id', 'int']], {
      dataQuality: {
        rules: [
          { type: 'not_null', column: 'nope' },
          { type: 'regex', column: 'id', pattern: '([' },
        ],
      },
    });
    const r3 = await api.http.post('/api/v1/pipeline').send(badRule).expect(400);
    expect(r3.body.details.map((d: { problem: string }) => d.problem)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/column 'nope' is not in the schema/),
        expect.stringMatching(/not a valid regular expression/),
      ]),
    );

    const badMapping = csvPipeline('bad', 'bad', [['id', 'int']], {
      transformation: {
        mappings: [{ op: 'derive', column: 'x', type: 'string', expression: 'upper(missing)' }],
      },
    });
    const r4 = await api.http.post('/api/v1/pipeline').send(badMapping).expect(400);
    expect(r4.body.message).toMatch(/derive reads 'missing'/);

    const badInstruction = csvPipeline('bad', 'bad', [['id', 'int']], { dataQuality: { aiInstruction: 42 } });
    const r5 = await api.http.post('/api/v1/pipeline').send(badInstruction).expect(400);
    expect(JSON.stringify(r5.body.details)).toContain('aiInstruction');

    const badName = { ...csvPipeline('x', 'x', [['id', 'int']]), name: '../etc' };
    await api.http.post('/api/v1/pipeline').send(badName).expect(400);
    await api.http.get('/api/v1/pipeline').expect(400);
    await api.http.get('/api/v1/pipeline').query({ pipeline: 'bad' }).expect(404);
  });

  it('keeps pipelines per environment', async () => {
    const other = await startApi();
    try {
      await api.http
        .post('/api/v1/pipeline')
        .send(csvPipeline('mine', 'mine', [['id', 'int']]))
        .expect(200);
      await other.http.get('/api/v1/pipeline').query({ pipeline: 'mine' }).expect(404);
      expect((await other.http.get('/api/v1/pipelines').expect(200)).body).toEqual([]);
    } finally {
      await other.close();
    }
  });
});
