import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { issueKey, newBootstrapKey } from './support/auth';
import { TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { csvPipeline, upload, waitForJob } from './support/ingest';
import { ModelDouble } from './support/model-double';
import { until } from './support/wait';

/**
 * Incidents end to end: a CodeGen script replacing an earlier version opens one; its evidence comes from
 * running both versions in the real sandbox over the rows the pipeline last landed (Postgres, MinIO,
 * real worker); verify restores a failing change; the model (a loopback double) only writes scripts.
 */

const DQ_V1 = `def check(rows):
    return [("amount is negative" if r["amount"] is not None and r["amount"] < 0 else None) for r in rows]
`;
const DQ_STRICT = `def check(rows):
    return [("amount below 100" if r["amount"] is None or r["amount"] < 100 else None) for r in rows]
`;
const DQ_SAME = `# The same rule, written again.
def check(rows):
    out = []
    for r in rows:
        out.append("amount is negative" if r["amount"] is not None and r["amount"] < 0 else None)
    return out
`;

interface Check {
  name: string;
  passed: boolean;
  observed: string;
  limit: string;
}
interface Profile {
  source: string;
  recordCount: number;
  sampledRows: number;
  dqFailures: number;
  dqPassRate: number;
  columns: {
    name: string;
    nullRate: number;
    topK?: unknown;
    quantiles?: unknown;
    lengthQuantiles?: unknown;
  }[];
  scriptSha: string;
  pipelineVersion: number;
}

describe('incidents of CodeGen script changes (real sandbox, worker, Postgres, MinIO)', () => {
  const env = uniqueEnvironment('incident');
  const table = `orders_${env.replace(/[^a-z0-9]/g, '_')}`;
  const double = new ModelDouble();
  const admin = newBootstrapKey();
  let api: TestApi;
  let worker: TestWorker;
  const flags = () => ({ TAPYARD_ENV: env, ...TEST_OBJECT_STORE, TAP_EGRESS_ALLOW: double.address });
  const get = (path: string) => api.http.get(`/api/v1${path}`);
  const post = (path: string, body: object = {}) => api.http.post(`/api/v1${path}`).send(body);
  const reply = (script: string) => ({ json: { script } });
  const csv = (n: number) =>
    'id,amount,email\n' +
    Array.from({ length: n }, (_, i) => `${i + 1},${i === 3 ? -5 : (i + 1) * 30},u${i}@example.com`).join(
      '\n',
    ) +
    '\n';

  async function settled(
    pipeline = 'orders',
    count = 1,
  ): Promise<{ id: string; verdict: string; summary: string }[]> {
    const start = Date.now();
    for (;;) {
      const list = (await get(`/incidents?pipeline=${pipeline}`).expect(200)).body as {
        id: string;
        verdict: string;
        summary: string;
      }[];
      if (list.length >= count && list.every((i) => i.verdict !== 'pending')) return list;
      if (Date.now() - start > 60_000) throw new Error(`incidents not settled: ${JSON.stringify(list)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  /** Rows landed by the live script: the sample the evidence runs on (a job that failed lands none). */
  async function land(rows: number): Promise<void> {
    const token = await upload(api.http, 'orders', csv(rows), 'orders.csv');
    // `warning`: the script rejects the negative amounts; `error` would have landed nothing.
    expect((await waitForJob(api.http, token)).rollup.status).toBe('warning');
  }

  /**
   * Waits for the data-quality script the POST writes in the background to go live. A job that
   * raced it would ask the model itself (the double has one reply for the two calls), fail for want
   * of a script and land nothing: the evidence would then run on a synthetic sample (`needs-human`).
   */
  async function scriptLive(version: number): Promise<void> {
    await until(`data-quality script version ${version} to go live`, async () => {
      const entry = (await get('/pipelines/orders/codegen-scripts').expect(200)).body.dataQuality;
      return entry?.version === version;
    });
  }

  beforeAll(async () => {
    await double.start();
    api = await startApi(flags());
    worker = await startWorker(flags());
    await api.http
      .put('/api/v1/secrets/ai')
      .send({ provider: 'openai-compatible', baseUrl: double.openaiUrl, model: 'codegen-1' })
      .expect(200);
  }, 60_000);
  afterAll(async () => {
    await worker.close();
    await api.close();
    await double.stop();
  });

  it('the first script opens nothing; a stricter replacement opens an incident whose evidence fails it', async () => {
    double.script(reply(DQ_V1));
    await post(
      '/pipeline',
      csvPipeline(
        'orders',
        table,
        [
          ['id', 'int'],
          ['amount', 'double'],
          ['email', 'string'],
        ],
        { dataQuality: { aiInstruction: 'Reject negative amounts.' } },
      ),
    ).expect(200);
    await scriptLive(1);
    await land(10);
    expect((await get('/incidents?pipeline=orders').expect(200)).body).toEqual([]);

    double.script(reply(DQ_STRICT));
    await post('/pipelines/orders/codegen-scripts/dataQuality/regenerate').expect(200);
    const [incident] = await settled();
    expect(incident).toMatchObject({ subject: 'pipeline', subjectName: 'orders', verdict: 'fail' });
    expect(incident.summary).toContain('dataQuality 1 → 2');
    const full = (await get(`/incidents/${incident.id}`).expect(200)).body;
    expect(full).toMatchObject({
      status: 'open',
      scriptVersions: [{ kind: 'dataQuality', before: 1, after: 2 }],
    });

    const ev = (await get(`/incidents/${incident.id}/evidence`).expect(200)).body as {
      baseline: Profile;
      candidate: Profile;
      real: Profile | null;
      checks: Check[];
      diff: { recordDeltaPct: number; dqPassRateDelta: number; lastN: number };
      blastRadius: { downstreamDatasets: { kind: string; coords: string }[] };
      verdict: string;
    };
    // The landed sample: 10 rows as typed, before any script; v1 rejects 1, the strict one rejects 4.
    expect(ev.baseline).toMatchObject({
      source: 'landed-sample',
      sampledRows: 10,
      recordCount: 9,
      dqFailures: 1,
    });
    expect(ev.candidate).toMatchObject({
      source: 'landed-sample',
      sampledRows: 10,
      recordCount: 6,
      dqFailures: 4,
    });
    expect(ev.candidate.dqPassRate).toBeCloseTo(0.6, 5);
    expect(ev.baseline.scriptSha).not.toBe(ev.candidate.scriptSha);
    expect(ev.diff.recordDeltaPct).toBeCloseTo(-33.33, 1);
    expect(ev.diff.lastN).toBe(1);
    const failed = ev.checks.filter((c) => !c.passed).map((c) => c.name);
    expect(failed).toEqual(expect.arrayContaining(['record-delta', 'dq-pass-rate']));
    expect(ev.checks.find((c) => c.name === 'candidate-runs')?.passed).toBe(true);
    expect(ev.real).toBeNull();
    // Values of a sensitive-looking column never appear; numbers get quantiles.
    const email = ev.candidate.columns.find((c) => c.name === 'email')!;
    expect(email.topK).toBeUndefined();
    expect(JSON.stringify(ev)).not.toContain('@example.com');
    expect(ev.candidate.columns.find((c) => c.name === 'amount')?.quantiles).toBeDefined();
    expect(ev.blastRadius.downstreamDatasets).toEqual([
      expect.objectContaining({ kind: 'postgres', coords: expect.stringContaining(table) }),
    ]);
  });

  it('the first real job running the change adds its profile', async () => {
    const [incident] = await settled();
    await land(5);
    const start = Date.now();
    let real: Profile | null = null;
    while (real === null && Date.now() - start < 30_000) {
      real = (await get(`/incidents/${incident.id}/evidence`).expect(200)).body.real;
      if (real === null) await new Promise((r) => setTimeout(r, 100));
    }
    // 5 rows (amounts 30, 60, 90, -5, 150); the strict script keeps amounts >= 100: only 150.
    expect(real).toMatchObject({ source: 'job', sampledRows: 5, recordCount: 1, dqFailures: 4 });
  });

  it('verify recomputes and, failing, restores the earlier version without opening another incident', async () => {
    const [incident] = await settled();
    const verified = (await post(`/incidents/${incident.id}/verify`).expect(200)).body;
    expect(verified).toMatchObject({
      verdict: 'fail',
      scriptVersions: [{ kind: 'dataQuality', before: 1, after: 1 }],
    });
    expect(verified.summary).toContain('restored');
    const entry = (await get('/pipelines/orders/codegen-scripts').expect(200)).body.dataQuality;
    expect(entry).toMatchObject({ script: DQ_V1, origin: 'restore-version', version: 3 });
    await new Promise((r) => setTimeout(r, 500));
    expect((await get('/incidents?pipeline=orders').expect(200)).body).toHaveLength(1);

    const resolved = (await post(`/incidents/${incident.id}/resolve`, { resolution: 'kept v1' }).expect(200))
      .body;
    expect(resolved).toMatchObject({ status: 'resolved', resolution: 'kept v1', verdict: 'fail' });
    expect((await post(`/incidents/${incident.id}/verify`).expect(409)).body.message).toContain('resolved');
  });

  it('an equivalent rewrite passes', async () => {
    // The sample is the last job's rows: 10 again, one negative (a pass rate of 0.9, the threshold).
    await land(10);
    double.script(reply(DQ_SAME));
    await post('/pipelines/orders/codegen-scripts/dataQuality/regenerate').expect(200);
    const list = await settled('orders', 2);
    expect(list[0].verdict).toBe('pass');
    expect((await get('/incidents?verdict=pass').expect(200)).body.map((i: { id: string }) => i.id)).toEqual([
      list[0].id,
    ]);
  });

  it('answers 404 and 400 clearly; an unknown tap has none; readers read, only updaters verify', async () => {
    expect((await get('/incidents/not-an-id').expect(404)).body.message).toContain("'not-an-id'");
    await get('/incidents/00000000-0000-4000-8000-000000000000').expect(404);
    await get('/incidents/00000000-0000-4000-8000-000000000000/evidence').expect(404);
    expect((await get('/incidents?verdict=maybe').expect(400)).body.message).toContain('verdict');
    expect((await get('/incidents?tap=anything').expect(200)).body).toEqual([]);

    const [latest] = await settled('orders', 2);
    const keyed = await startApi({ ...flags(), USE_API_KEYS: 'true', TAPYARD_BOOTSTRAP_API_KEY: admin });
    try {
      const reader = await issueKey(keyed.http, admin, 'incident-reader', {
        capabilities: ['pipeline:read'],
      });
      await keyed.http.get(`/api/v1/incidents/${latest.id}/evidence`).set('x-api-key', reader).expect(200);
      expect(
        (await keyed.http.get('/api/v1/incidents').set('x-api-key', reader).expect(200)).body,
      ).toHaveLength(2);
      const denied = await keyed.http
        .post(`/api/v1/incidents/${latest.id}/verify`)
        .set('x-api-key', reader)
        .expect(403);
      expect(denied.body.message).toContain('pipeline:update');
      const nobody = await issueKey(keyed.http, admin, 'incident-none', { capabilities: ['tap:read'] });
      const refused = await keyed.http.get('/api/v1/incidents').set('x-api-key', nobody).expect(403);
      expect(refused.body.message).toContain('pipeline:read');
    } finally {
      await keyed.close();
    }
  });

  it('go with their pipeline', async () => {
    await api.http.delete('/api/v1/pipeline').query({ pipeline: 'orders' }).expect(200);
    expect((await get('/incidents').expect(200)).body).toEqual([]);
  });
});
