import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { uniqueEnvironment } from './support/env';
import { csvPipeline, upload, waitForJob } from './support/ingest';

/** Each bad input gets a clear 4xx, or a job that ends `error` (or `warning`) saying precisely why. */
describe('ingestion bad input', () => {
  const env = uniqueEnvironment('bad');
  let api: TestApi;
  let worker: TestWorker;
  const table = (n: string) => `${n}_${env.replace(/[^a-z0-9]/g, '_')}`;

  beforeAll(async () => {
    api = await startApi({ TAPYARD_ENV: env, UPLOAD_LIMIT: '1mb' });
    worker = await startWorker({ TAPYARD_ENV: env });
    await api.http
      .post('/api/v1/pipeline')
      .send(
        csvPipeline('p', table('p'), [
          ['a', 'int'],
          ['b', 'string'],
        ]),
      )
      .expect(200);
    await api.http
      .post('/api/v1/pipeline')
      .send({
        ...csvPipeline('j', table('j'), [['_json', 'string']]),
        source: { schemaProperties: { fields: [{ name: '_json', type: 'string' }] } },
      })
      .expect(200);
    await api.http
      .post('/api/v1/pipeline')
      .send({
        ...csvPipeline('x', table('x'), [['_xml', 'string']]),
        source: {
          fileAttributes: { format: 'xml', xmlAttributes: { rowElement: 'row' } },
          schemaProperties: { fields: [{ name: '_xml', type: 'string' }] },
        },
      })
      .expect(200);
  });
  afterAll(async () => {
    await worker.close();
    await api.close();
  });

  async function failsWith(pipeline: string, content: string | Buffer, pattern: RegExp, filename = 'f.csv') {
    const { rollup } = await waitForJob(api.http, await upload(api.http, pipeline, content, filename));
    expect(rollup.status).toBe('error');
    expect(rollup.jobs[0].lastError?.description).toMatch(pattern);
    return rollup.jobs[0].lastError;
  }
  async function warns(pipeline: string, content: string | Buffer) {
    const { rollup } = await waitForJob(api.http, await upload(api.http, pipeline, content));
    expect(rollup.status).toBe('warning');
  }

  it('answers 4xx for requests it cannot accept', async () => {
    const unknown = await api.http
      .post('/api/v1/pipeline/upload')
      .field('pipeline', 'nope')
      .attach('file', Buffer.from('a\n1\n'), 'x.csv')
      .expect(404);
    expect(unknown.body.message).toBe("pipeline 'nope' does not exist");
    const noFile = await api.http.post('/api/v1/pipeline/upload').field('pipeline', 'p').expect(400);
    expect(noFile.body.message).toBe("multipart field 'file' is required");
    const empty = await api.http
      .post('/api/v1/pipeline/upload')
      .field('pipeline', 'p')
      .attach('file', Buffer.alloc(0), 'e.csv')
      .expect(400);
    expect(empty.body.message).toMatch(/is empty/);
    const big = await api.http
      .post('/api/v1/pipeline/upload')
      .field('pipeline', 'p')
      .attach('file', Buffer.alloc(2 * 1024 * 1024, 'a'), 'big.csv')
      .expect(413);
    expect(big.body.message).toMatch(/upload limit/);
    const sevenZip = await api.http
      .post('/api/v1/pipeline/upload')
      .field('pipeline', 'p')
      .attach('file', Buffer.from("7z\xBC\xAF'\x1C"), 'x.csv.7z')
      .expect(415);
    expect(sevenZip.body.message).toMatch(/compression Tapyard does not read/);
    // Uploads reach the workers only through the object store: an instance without one refuses them.
    const bare = await startApi({ TAPYARD_ENV: env, OBJECT_STORE_ENDPOINT: undefined });
    try {
      const refused = await bare.http
        .post('/api/v1/pipeline/upload')
        .field('pipeline', 'p')
        .attach('file', Buffer.from('a,b\n1,2\n'), 'x.csv')
        .expect(503);
      expect(refused.body.message).toMatch(/object store is not configured/);
      expect(refused.body.code).toBe('upload.no_object_store');
    } finally {
      await bare.close();
    }
    await api.http
      .post('/api/v1/pipeline/upload')
      .set('content-type', 'application/json')
      .send({})
      .expect(415);
    // Still serving.
    await api.http.get('/api/v1/version').expect(200);
  });

  it('a header-only file ends as error', async () => {
    expect(await failsWith('p', 'a,b\n', /header row but no data rows/)).toMatchObject({
      processName: 'DataQuality',
    });
  });

  it('a wrong delimiter ends as error naming the delimiter', async () => {
    await failsWith('p', 'a;b\n1;x\n', /check the delimiter \(','\)/);
  });

  it('ragged rows, unbalanced quotes, non-UTF-8 bytes and NUL bytes are rejected rows, the rest loads', async () => {
    await warns('p', 'a,b\n1,x\n2,y,z\n3\n4,ok\n');
    await warns('p', 'a,b\n1,x\n2,"never closed\n3,z\n');
    await warns(
      'p',
      Buffer.concat([Buffer.from('a,b\n1,x\n2,'), Buffer.from([0xff, 0xfe]), Buffer.from('\n3,z\n')]),
    );
    await warns('p', 'a,b\n1,x\n2,nul\u0000here\n');
  });

  it('a 10 MB single field loads', async () => {
    const big = await startApi({ TAPYARD_ENV: env, UPLOAD_LIMIT: '64mb' });
    try {
      const token = await upload(big.http, 'p', `a,b\n1,${'x'.repeat(10 * 1024 * 1024)}\n`);
      expect((await waitForJob(big.http, token)).rollup.status).toBe('success');
    } finally {
      await big.close();
    }
  });

  it("a header of mostly unknown columns lacking the schema's is refused as another file", async () => {
    const header = Array.from({ length: 5000 }, (_, i) => `c${i}`).join(',');
    const row = Array.from({ length: 5000 }, () => '1').join(',');
    // Before the test below: its job adds 5,000 columns to the schema before PostgreSQL refuses them.
    await failsWith('p', `a,${header}\n1,${row}\n`, /looks like another file: 5000 of its 5001 columns/);
  });

  it('5,000 columns end as error naming the PostgreSQL limit', async () => {
    const header = Array.from({ length: 5000 }, (_, i) => `c${i}`).join(',');
    const row = Array.from({ length: 5000 }, () => '1').join(',');
    // The schema's own columns come first: without them the header would be refused as another file's.
    await failsWith('p', `a,b,${header}\n1,x,${row}\n`, /at most 1600 columns/);
  });

  it('JSON that is neither an array nor NDJSON ends as error; NDJSON and arrays load', async () => {
    await failsWith(
      'j',
      '"just a string"',
      /JSON input must be an array of records, NDJSON, or an object/,
      'f.json',
    );
    const { rollup } = await waitForJob(
      api.http,
      await upload(api.http, 'j', '{"a":1}\n{"a":2}\n', 'f.ndjson'),
    );
    expect(rollup.status).toBe('success');
    const arr = await waitForJob(api.http, await upload(api.http, 'j', '[{"a":1},{"b":[1,2]}]', 'f.json'));
    expect(arr.rollup.status).toBe('success');
  });

  it('deeply nested JSON is a rejected record, not a crash', async () => {
    await warns('j', `[{"ok":1},${'['.repeat(100000)}${']'.repeat(100000)}]`);
  });

  it('invalid XML and XML with a DOCTYPE end as error', async () => {
    await failsWith('x', '<rows><row>1</row><row>', /invalid XML at line 1/, 'f.xml');
    await failsWith(
      'x',
      '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaa">]><rows><row>&a;</row></rows>',
      /DOCTYPE/,
      'f.xml',
    );
    const ok = await waitForJob(
      api.http,
      await upload(api.http, 'x', '<rows><row id="1">a</row><row id="2">b</row></rows>', 'f.xml'),
    );
    expect(ok.rollup.status).toBe('success');
  });
});
