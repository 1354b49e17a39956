import { Client } from 'pg';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_DATABASE_URL, uniqueEnvironment } from './support/env';
import { RollupAnswer, csvPipeline, upload, waitForJob } from './support/ingest';

/** What a load tells about itself: rejects as written, row counts in the rollup, progress in bytes. */
describe('load diagnostics (real Postgres and Redis)', () => {
  const env = uniqueEnvironment('diag');
  const schema = 'ingest_test';
  let api: TestApi;
  let worker: TestWorker;
  let pg: Client;

  const table = (name: string) => `${name}_${env.replace(/[^a-z0-9]/g, '_')}`;
  async function pipeline(name: string, fields: [string, string][], extra: Record<string, unknown> = {}) {
    await api.http
      .post('/api/v1/pipeline')
      .send({ ...csvPipeline(name, table(name), fields), ...extra })
      .expect(200);
  }
  async function rejects(name: string, token: string): Promise<{ line: string; raw: string }[]> {
    const res = await pg.query(
      `SELECT line, raw FROM ${schema}."${table(name)}_rejects" WHERE pipeline_token = $1 ORDER BY line::int`,
      [token],
    );
    return res.rows;
  }

  beforeAll(async () => {
    api = await startApi({ TAPYARD_ENV: env });
    worker = await startWorker({ TAPYARD_ENV: env, STATUS_PROGRESS_MS: '10' });
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
  });
  afterAll(async () => {
    await pg.end();
    await worker.close();
    await api.close();
  });

  const FIELDS: [string, string][] = [
    ['id', 'int'],
    ['name', 'string'],
    ['note', 'string'],
  ];
  // Rows 3 to 6 are rejected (their id is not an int); their raw text must read back as the same cells.
  const CSV =
    'id,name,note\n' +
    '1,"Smith, John",plain\n' +
    'x,"Doe, Jane",""\n' +
    'y,"say ""hi""",\n' +
    'z,"two\nlines", padded \n' +
    'w,"a,b","c""d"\n' +
    '6,ok,ok\n';
  const RAWS = ['x,"Doe, Jane",""', 'y,"say ""hi""",', 'z,"two\nlines", padded ', 'w,"a,b","c""d"'];

  it.each([
    ['the fast path', 'raw_fast', {}],
    [
      'the validating path',
      'raw_checked',
      { dataQuality: { rules: [{ type: 'not_null', column: 'name' }] } },
    ],
  ])("a field-level reject's raw keeps the CSV quoting on %s", async (_, name, extra) => {
    await pipeline(name, FIELDS, extra);
    const token = await upload(api.http, name, CSV);
    const { rollup } = await waitForJob(api.http, token);
    expect(rollup.status).toBe('warning');
    expect((await rejects(name, token)).map((r) => [r.line, r.raw])).toEqual([
      ['3', RAWS[0]],
      ['4', RAWS[1]],
      ['5', RAWS[2]],
      ['7', RAWS[3]],
    ]);
  });

  it("a reject's raw keeps the pipeline's own delimiter and escape", async () => {
    await pipeline('raw_semicolon', FIELDS, {
      source: {
        fileAttributes: { csvAttributes: { delimiter: ';', header: true, quote: '"', escape: '\\' } },
        schemaProperties: { fields: FIELDS.map(([n, type]) => ({ name: n, type })) },
      },
    });
    const token = await upload(api.http, 'raw_semicolon', 'id;name;note\n1;a;b\nq;"x;y";"say \\"hi\\""\n');
    await waitForJob(api.http, token);
    expect((await rejects('raw_semicolon', token)).map((r) => r.raw)).toEqual(['q;"x;y";"say \\"hi\\""']);
  });

  it('the rollup carries the rows loaded and rejected as numbers, for warning and error jobs', async () => {
    await pipeline('counted', [['id', 'int']]);
    const warned = await waitForJob(api.http, await upload(api.http, 'counted', 'id\n1\nx\n2\n3\n'));
    expect(warned.rollup.jobs[0]).toMatchObject({ status: 'warning', rowsLoaded: 3, rowsRejected: 1 });
    const failed = await waitForJob(api.http, await upload(api.http, 'counted', 'id\nx\ny\n'));
    expect(failed.rollup.jobs[0]).toMatchObject({ status: 'error', rowsLoaded: 0, rowsRejected: 2 });
    // A job that ended before reading its input has no counts.
    const refused = await waitForJob(api.http, await upload(api.http, 'counted', 'id\n'));
    expect(refused.rollup.jobs[0]).toMatchObject({ status: 'error', rowsLoaded: null, rowsRejected: null });
  });

  it("progress of a file received before its job starts is a percentage of the file's exact size", async () => {
    await pipeline('sized', [
      ['id', 'int'],
      ['label', 'string'],
    ]);
    let csv = 'id,label\n';
    for (let i = 0; i < 100_000; i++) csv += `${i},r${i}\n`;
    // The file before the pipeline field: the upload is staged whole, then its job is queued.
    const res = await api.http
      .post('/api/v1/pipeline/upload')
      .attach('file', Buffer.from(csv), 'sized.csv')
      .field('pipeline', 'sized')
      .expect(200);
    const answer: RollupAnswer = await waitForJob(api.http, res.text);
    expect(answer.rollup.jobs[0]).toMatchObject({ status: 'success', rowsLoaded: 100_000, rowsRejected: 0 });
    const progress = answer.events.filter((e) => e.state === 'processing');
    expect(progress.length).toBeGreaterThan(0);
    for (const e of progress) {
      const m = /; (\d+) of (\d+) bytes read \((\d+)%\)$/.exec(e.description);
      expect(m).not.toBeNull();
      const [read, total, percent] = (m as RegExpExecArray).slice(1).map(Number);
      expect(total).toBe(csv.length);
      expect(percent).toBe(Math.floor((read * 100) / total));
    }
  });
});
