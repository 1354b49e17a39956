import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { crc32, deflateSync } from 'node:zlib';
import { Pool } from 'pg';
import { TestApi, startApi } from './support/apps';
import { newBootstrapKey } from './support/auth';
import { TEST_DATABASE_URL, TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { csvPipeline } from './support/ingest';
import { ModelDouble } from './support/model-double';

/**
 * Issue 28, items 1-7: one contract test per statement of the spec or addendum an audit found unmet,
 * each named after the line it proves, through HTTP against the real API (real Postgres, MinIO, the
 * real sandbox for tap scripts, and a loopback double of the OpenAI wire protocol for the model).
 */

const PDF = readFileSync(join(__dirname, 'corpora/documents/travel-policy.pdf'));

/** A real 2×2 RGB PNG: signature, IHDR, one zlib IDAT, IEND, each chunk with its CRC. */
function png(): Buffer {
  const chunk = (type: string, data: Buffer): Buffer => {
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(2, 0);
  header.writeUInt32BE(2, 4);
  header.set([8, 2, 0, 0, 0], 8);
  // Each scanline: filter byte 0, then two RGB pixels.
  const pixels = Buffer.from([0, 255, 0, 0, 0, 255, 0, 0, 0, 0, 255, 255, 255, 255]);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(pixels)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

describe('contract fidelity (issue 28)', () => {
  const env = uniqueEnvironment('fidelity');
  const table = `fid_${env.replace(/[^a-z0-9]/g, '_')}`;
  const double = new ModelDouble();
  let api: TestApi;
  let pg: Pool;
  const get = (path: string) => api.http.get(`/api/v1${path}`);
  const post = (path: string, body: object = {}) => api.http.post(`/api/v1${path}`).send(body);

  beforeAll(async () => {
    await double.start();
    api = await startApi({ TAPYARD_ENV: env, ...TEST_OBJECT_STORE, TAP_EGRESS_ALLOW: double.address });
    pg = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
    await api.http
      .put('/api/v1/secrets/ai')
      .send({ provider: 'openai-compatible', baseUrl: double.openaiUrl, apiKey: 'sk-double', model: 'm-1' })
      .expect(200);
    await post(
      '/pipeline',
      csvPipeline('sales', `${table}_sales`, [
        ['id', 'int'],
        ['amount', 'double'],
      ]),
    ).expect(200);
  }, 60_000);
  afterAll(async () => {
    await pg.end();
    await api.close();
    await double.stop();
  });
  beforeEach(() => double.reset());

  describe('addendum: invalid Quartz expressions anywhere (this endpoint too) are 400 with the reason', () => {
    it('POST /tap/cron validates a description written as a Quartz expression, never asking the model', async () => {
      // What the model would answer today for any description: a valid but unrelated schedule.
      const unrelated = { json: { cronExpression: '0 0 1 * * ?', explanation: 'daily at 1am' } };
      double.script(unrelated, unrelated, unrelated, unrelated);
      const hour = await post('/tap/cron', { description: '0 0 25 * * *' }).expect(400);
      expect(hour.body.message).toMatch(/hours/);
      expect(hour.body.message).toContain('25');
      const bothDays = await post('/tap/cron', { description: '0 0 7 * * MON' }).expect(400);
      expect(bothDays.body.message).toMatch(/day-of-month '\*' and day-of-week 'MON' are both specified/);
      const unix = await post('/tap/cron', { description: '0 7 * * *' }).expect(400);
      expect(unix.body.message).toMatch(/Quartz needs 6 or 7 \(seconds first\)/);

      const valid = await post('/tap/cron', { description: '0 30 6 ? * MON-FRI', timezone: 'UTC' }).expect(
        200,
      );
      expect(valid.body).toMatchObject({
        cronExpression: '0 30 6 ? * MON-FRI',
        explanation: 'At 06:30:00, Monday through Friday',
      });
      expect(valid.body.nextRuns).toHaveLength(5);
      expect(double.calls).toHaveLength(0);
    });
  });

  describe('spec Run result: `recordCount` is "Records submitted"; `status` is `success`, `skipped` when debounced', () => {
    it('a script that yields one record and then raises submitted none: recordCount 0, status success, the failure in error', async () => {
      await post('/tap', {
        name: 'half',
        targetPipeline: 'sales',
        script: 'def fetch():\n    yield {"id": 1, "amount": 2.5}\n    raise RuntimeError("page 2 failed")\n',
      }).expect(200);
      const run = await post('/tap/run', { name: 'half', mode: 'run' }).expect(200);
      expect(run.body).toMatchObject({
        status: 'success',
        persisted: false,
        persistedReason: 'run_error',
        recordCount: 0,
        pipelineTokens: [],
      });
      expect(run.body.error).toMatch(/RuntimeError: page 2 failed/);
      expect(run.body.logs).toContain('the script yielded 1 record(s); none was submitted');
      expect(run.body.publisherToken).toBeUndefined();

      const test = await post('/tap/run', { name: 'half', mode: 'test' }).expect(200);
      expect(test.body.status).toBe('success');
      expect(test.body.error).toMatch(/page 2 failed/);

      // The run history keeps telling a failed run apart (addendum: its own shape).
      const runs = (await get('/tap/runs?name=half').expect(200)).body as { mode: string; status: string }[];
      expect(runs.map((r) => [r.mode, r.status])).toEqual([
        ['test', 'error'],
        ['run', 'error'],
      ]);
      expect(runs[1]).toMatchObject({ recordCount: 0, persisted: false });
    });

    it('a run without a target pipeline submitted nothing: recordCount 0, the logs say what was yielded', async () => {
      await post('/tap', {
        name: 'nowhere',
        script: 'def fetch():\n    for i in range(3):\n        yield {"id": i}\n',
      }).expect(200);
      const run = await post('/tap/run', { name: 'nowhere', mode: 'run' }).expect(200);
      expect(run.body).toMatchObject({
        status: 'success',
        error: null,
        persisted: false,
        persistedReason: 'no_target_pipeline',
        recordCount: 0,
        columns: ['id'],
      });
      expect(run.body.logs).toContain('the script yielded 3 record(s); none was submitted');
    });
  });

  describe('spec Limits: `testLimit` greater than 0 sets the test-limit variable; otherwise no cap', () => {
    it('a negative testLimit is no cap, not a 400', async () => {
      const script =
        'import os\ndef fetch():\n    yield {"limit": os.environ.get("SERVICE_TAP_TEST_LIMIT", "none")}\n';
      const negative = await api.http
        .post('/api/v1/tap/test?testLimit=-5')
        .send({ name: 'limits', script })
        .expect(200);
      expect(negative.body).toMatchObject({ error: null, records: [{ limit: 'none' }] });
      const zero = await api.http
        .post('/api/v1/tap/test?testLimit=0')
        .send({ name: 'limits', script })
        .expect(200);
      expect(zero.body.records).toEqual([{ limit: 'none' }]);
      const capped = await api.http
        .post('/api/v1/tap/test?testLimit=3')
        .send({ name: 'limits', script })
        .expect(200);
      expect(capped.body.records).toEqual([{ limit: '3' }]);
      await api.http.post('/api/v1/tap/test?testLimit=x').send({ name: 'limits', script }).expect(400);
    });
  });

  describe('addendum: 415 for an unsupported file type (by content: magic bytes, binary sniffing)', () => {
    const files: [string, Buffer, RegExp][] = [
      ['report.pdf', PDF, /'report\.pdf' is a PDF document/],
      ['chart.png', png(), /'chart\.png' is a PNG image/],
      // The name does not decide: a PDF called .csv is still a PDF.
      ['sales.csv', PDF, /'sales\.csv' is a PDF document/],
    ];

    it.each(files)(
      'POST /pipeline/generate refuses %s (415 naming the type)',
      async (name, bytes, message) => {
        const res = await api.http.post('/api/v1/pipeline/generate').attach('file', bytes, name).expect(415);
        expect(res.body).toMatchObject({
          code: 'pipeline.unsupported_file',
          message: expect.stringMatching(message),
        });
      },
    );

    it.each(files)(
      'POST /pipeline/profile refuses %s (415 naming the type)',
      async (name, bytes, message) => {
        const res = await api.http.post('/api/v1/pipeline/profile').attach('file', bytes, name).expect(415);
        expect(res.body).toMatchObject({
          code: 'pipeline.unsupported_file',
          message: expect.stringMatching(message),
        });
      },
    );

    it.each(files)(
      'an upload of %s to a CSV pipeline is 415 and starts no job',
      async (name, bytes, message) => {
        // Pipeline field first (a job would stream the file as it arrives) and file first.
        const early = await api.http
          .post('/api/v1/pipeline/upload')
          .field('pipeline', 'sales')
          .attach('file', bytes, name)
          .expect(415);
        expect(early.body.message).toMatch(message);
        expect(early.body.message).toContain("pipeline 'sales' reads CSV, JSON or XML");
        const late = await api.http
          .post('/api/v1/pipeline/upload')
          .attach('file', bytes, name)
          .field('pipeline', 'sales')
          .expect(415);
        expect(late.body.code).toBe('pipeline.unsupported_file');
        const jobs = await get('/pipeline/status?pipelinename=sales').expect(200);
        expect(jobs.body).toEqual([]);
      },
    );

    it('a CSV sample is still proposed and profiled', async () => {
      const csv = Buffer.from('id,amount\n1,2.5\n2,3.75\n');
      const proposal = await api.http
        .post('/api/v1/pipeline/generate')
        .attach('file', csv, 'orders.csv')
        .expect(200);
      expect(proposal.body.source.schemaProperties.fields).toEqual([
        { name: 'id', type: 'int' },
        // decimal(18,2) for money (issue 27), with its precision and scale
        expect.objectContaining({ name: 'amount', type: expect.any(String) }),
      ]);
      await api.http.post('/api/v1/pipeline/profile').attach('file', csv, 'orders.csv').expect(200);
    });
  });

  describe('addendum: GET /incidents/{id}/evidence while evidence is still computing → 200 with verdict "pending" and the parts known so far', () => {
    const DQ_A = 'def check(rows):\n    return [None for r in rows]\n';
    const DQ_B =
      'def check(rows):\n    return [("negative" if r["amount"] is not None and r["amount"] < 0 else None) for r in rows]\n';

    async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
      for (let i = 0; i < 600; i++) {
        const value = await probe();
        if (value !== undefined) return value;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`timed out waiting for ${what}`);
    }
    const incidents = async () =>
      (await get('/incidents?pipeline=checked').expect(200)).body as { id: string; verdict: string }[];

    it('answers the pending evidence while the computation is held, then the computed one', async () => {
      double.script({ json: { script: DQ_A } });
      await post(
        '/pipeline',
        csvPipeline('checked', `${table}_checked`, [['amount', 'double']], {
          dataQuality: { aiInstruction: 'Reject negative amounts.' },
        }),
      ).expect(200);
      const version = async () =>
        (await get('/pipelines/checked/codegen-scripts').expect(200)).body.dataQuality?.version as
          number | undefined;
      await until('the first script', async () => ((await version()) === 1 ? true : undefined));
      double.script({ json: { script: DQ_B } });
      await post('/pipelines/checked/codegen-scripts/dataQuality/regenerate').expect(200);
      await until('the first incident to settle', async () => {
        const list = await incidents();
        return list.length === 1 && list[0].verdict !== 'pending' ? true : undefined;
      });

      // The computation's first read is the pipeline's landed sample: a table lock held by this test
      // holds it there, so the request below lands while the evidence is computing, whatever the timing.
      const lock = await pg.connect();
      let id: string;
      try {
        await lock.query('BEGIN');
        await lock.query('LOCK TABLE tapyard.landed_samples IN ACCESS EXCLUSIVE MODE');
        // Restoring version 1 reads no sample (static checks only) and opens the second incident.
        await post('/pipelines/checked/codegen-scripts/dataQuality/versions/1/restore').expect(200);
        id = await until('the second incident', async () => {
          const list = await incidents();
          return list.length === 2 ? list.find((i) => i.verdict === 'pending')?.id : undefined;
        });
        const pending = await get(`/incidents/${id}/evidence`).expect(200);
        expect(pending.body).toMatchObject({
          verdict: 'pending',
          scriptVersions: [{ kind: 'dataQuality', before: 2, after: 3 }],
          thresholds: { allowColumnRemoval: expect.any(Boolean), minDqPassRate: expect.any(Number) },
          blastRadius: { downstreamDatasets: [{ kind: 'postgres', coords: expect.stringContaining(table) }] },
          baseline: null,
          candidate: null,
          real: null,
          diff: null,
          checks: [],
          computedAt: null,
        });
      } finally {
        await lock.query('ROLLBACK');
        lock.release();
      }

      const done = await until('the evidence', async () => {
        const ev = (await get(`/incidents/${id}/evidence`).expect(200)).body as { verdict: string };
        return ev.verdict === 'pending' ? undefined : ev;
      });
      expect(done).toMatchObject({
        scriptVersions: [{ kind: 'dataQuality', before: 2, after: 3 }],
        computedAt: expect.any(String),
        baseline: expect.objectContaining({ scriptSha: expect.any(String) }),
      });
    });
  });
});

describe('spec Authentication rule 3 with USE_API_KEYS=true; addendum GET /auth/mode', () => {
  const boot = newBootstrapKey();
  let keyed: TestApi;
  let open: TestApi;
  beforeAll(async () => {
    keyed = await startApi({
      TAPYARD_ENV: uniqueEnvironment('fidelity-keys'),
      USE_API_KEYS: 'true',
      TAPYARD_BOOTSTRAP_API_KEY: boot,
    });
    open = await startApi({ TAPYARD_ENV: uniqueEnvironment('fidelity-open') });
  }, 60_000);
  afterAll(async () => {
    await keyed.close();
    await open.close();
  });

  it('GET /version needs a key like every other route', async () => {
    const none = await keyed.http.get('/api/v1/version').expect(401);
    expect(none.body.code).toBe('auth.authentication_required');
    await keyed.http.get('/api/v1/version').set('x-api-key', 'tpy_not-a-key').expect(401);
    const v = await keyed.http.get('/api/v1/version').set('x-api-key', boot).expect(200);
    expect(v.body).toMatchObject({ useApiKeys: 'true', useUserAuth: 'false', multiTenant: 'false' });
  });

  it('GET /auth/mode answers {useUserAuth, useApiKeys, multiTenant} without credentials, and nothing else', async () => {
    const mode = await keyed.http.get('/api/v1/auth/mode').expect(200);
    expect(mode.body).toEqual({ useUserAuth: false, useApiKeys: true, multiTenant: false });
    const anonymous = await open.http.get('/api/v1/auth/mode').expect(200);
    expect(anonymous.body).toEqual({ useUserAuth: false, useApiKeys: false, multiTenant: false });
    // Without authentication nothing changes for /version.
    await open.http.get('/api/v1/version').expect(200);
  });
});
