import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { issueKey, newBootstrapKey } from './support/auth';
import { TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { csvPipeline, upload, waitForJob } from './support/ingest';
import { closedPort } from './support/net';
import { ModelDouble } from './support/model-double';
import { until } from './support/wait';

/**
 * Issue 28 items 8 and 9 (addendum "Incidents"; spec "Incident evidence"): a tap script change opens an
 * incident with `subject: "tap"` whose evidence comes from running both versions in the real sandbox,
 * compared with the tap's last output; thresholds per pipeline; a blast radius from what Tapyard knows;
 * values only for callers who may read the rows of the pipeline's destination. Real API, worker,
 * Postgres, MinIO; the model is a loopback double.
 */

/** A tap yielding `n` rows; `label` only when `withLabel`. */
const tapScript = (n: number, withLabel = true): string => `import os

def fetch():
    limit = int(os.environ.get("SERVICE_TAP_TEST_LIMIT", "0") or 0)
    for i in range(min(${n}, limit) if limit > 0 else ${n}):
        yield {"id": i, "amount": (i + 1) * 10${withLabel ? ', "label": "Zanzibar" if i < 3 else "Lisbon"' : ''}}
`;
const DQ_V1 = `def check(rows):
    return [("amount is negative" if r["amount"] is not None and r["amount"] < 0 else None) for r in rows]
`;
const DQ_STRICT = `def check(rows):
    return [("amount below 100" if r["amount"] is None or r["amount"] < 100 else None) for r in rows]
`;

interface Column {
  name: string;
  topK?: { value: string; count: number }[];
  quantiles?: Record<string, number>;
}
interface Profile {
  source: string;
  recordCount: number;
  tapVersion: number;
  columns: Column[];
}
interface Evidence {
  baseline: Profile;
  candidate: Profile;
  real: unknown;
  diff: { recordDeltaPct: number; columnsRemoved: string[]; lastN: number; recordDeltaVsMeanOfLastN: number };
  blastRadius: {
    lastDownstreamRunAt: string;
    downstreamPipelines: string[];
    downstreamDatasets: { kind: string; coords: string }[];
    consumersFromContracts: string[];
  };
  thresholds: Record<string, unknown>;
  checks: { name: string; passed: boolean; observed: string }[];
  verdict: string;
  scriptVersions?: unknown;
}
interface Item {
  id: string;
  subject: string;
  subjectName: string;
  verdict: string;
  summary: string;
}

describe('incidents of tap script changes, thresholds, blast radius, values (real sandbox, worker)', () => {
  const env = uniqueEnvironment('inctap');
  const table = `feed_${env.replace(/[^a-z0-9]/g, '_')}`;
  const double = new ModelDouble();
  const admin = newBootstrapKey();
  const suiteStarted = Date.now();
  let api: TestApi;
  let keyed: TestApi;
  let worker: TestWorker;
  const flags = () => ({
    TAPYARD_ENV: env,
    ...TEST_OBJECT_STORE,
    TAP_EGRESS_ALLOW: double.address,
    TAP_DEBOUNCE_MS: '0',
  });
  const get = (path: string) => api.http.get(`/api/v1${path}`);
  const post = (path: string, body: object = {}) => api.http.post(`/api/v1${path}`).send(body);

  /** Waits until `query` lists `count` incidents, none pending. */
  async function settled(query: string, count: number): Promise<Item[]> {
    for (let i = 0; i < 900; i++) {
      const list = (await get(`/incidents?${query}`).expect(200)).body as Item[];
      if (list.length >= count && list.every((x) => x.verdict !== 'pending')) return list;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`incidents of ${query} not settled`);
  }
  const evidenceOf = async (id: string): Promise<Evidence> =>
    (await get(`/incidents/${id}/evidence`).expect(200)).body as Evidence;

  beforeAll(async () => {
    await double.start();
    api = await startApi(flags());
    // Listening, so the scripts its evidence runs can call it with their run keys.
    const port = await closedPort();
    keyed = await startApi({
      ...flags(),
      USE_API_KEYS: 'true',
      TAPYARD_BOOTSTRAP_API_KEY: admin,
      PORT: String(port),
      HOST: '127.0.0.1',
    });
    await keyed.app.listen(port, '127.0.0.1');
    worker = await startWorker(flags());
    await api.http
      .put('/api/v1/secrets/ai')
      .send({ provider: 'openai-compatible', baseUrl: double.openaiUrl, model: 'codegen-1' })
      .expect(200);
    const fields: [string, string][] = [
      ['id', 'int'],
      ['amount', 'double'],
      ['label', 'string'],
    ];
    await post('/pipeline', { ...csvPipeline('feed', table, fields), catalog: 'sales' }).expect(200);
    // Another pipeline loading the very same table: what a change to 'feed' reaches.
    await post('/pipeline', { ...csvPipeline('feed-copy', table, fields), catalog: 'sales' }).expect(200);
    await post('/tap', { name: 'feeder', script: tapScript(10), targetPipeline: 'feed' }).expect(200);
    const run = await post('/tap/run', { name: 'feeder', mode: 'run' }).expect(200);
    expect(run.body).toMatchObject({ persisted: true, recordCount: 10 });
  }, 120_000);

  afterAll(async () => {
    await worker?.close();
    await keyed?.close();
    await api?.close();
    await double.stop();
  });

  it('saving a tap script opens a tap incident whose evidence runs both versions and compares them with the last output', async () => {
    expect((await get('/incidents?tap=feeder').expect(200)).body).toEqual([]);
    await post('/tap', { name: 'feeder', script: tapScript(5, false) }).expect(200);
    const [incident] = await settled('tap=feeder', 1);
    expect(incident).toMatchObject({ subject: 'tap', subjectName: 'feeder', verdict: 'fail' });
    expect(incident.summary).toContain('1 → 2');
    expect((await get(`/incidents/${incident.id}`).expect(200)).body).toMatchObject({
      subject: 'tap',
      tapVersions: { before: 1, after: 2 },
    });
    // A tap's incidents are not its pipeline's.
    expect((await get('/incidents?pipeline=feed').expect(200)).body).toEqual([]);

    const ev = await evidenceOf(incident.id);
    expect(ev.baseline).toMatchObject({ source: 'tap-test-run', recordCount: 10, tapVersion: 1 });
    expect(ev.candidate).toMatchObject({ source: 'tap-test-run', recordCount: 5, tapVersion: 2 });
    expect(ev.diff.recordDeltaPct).toBe(-50);
    expect(ev.diff.columnsRemoved).toEqual(['label']);
    // The last real run loaded 10 records: the candidate's 5 sit 50 % under it.
    expect(ev.diff.lastN).toBe(1);
    expect(ev.diff.recordDeltaVsMeanOfLastN).toBe(-50);
    const failed = ev.checks.filter((c) => !c.passed).map((c) => c.name);
    expect(failed).toEqual(expect.arrayContaining(['record-delta', 'column-removal']));
    expect(ev).not.toHaveProperty('scriptVersions');
    expect(ev.baseline.columns.find((c) => c.name === 'label')?.topK).toEqual(
      expect.arrayContaining([{ value: 'Zanzibar', count: 3 }]),
    );
  });

  it('the first real run of the new script adds its profile as real', async () => {
    const [incident] = await settled('tap=feeder', 1);
    expect((await evidenceOf(incident.id)).real).toBeNull();
    const run = await post('/tap/run', { name: 'feeder', mode: 'run' }).expect(200);
    expect(run.body).toMatchObject({ persisted: true, recordCount: 5 });
    let real: { source: string; recordCount: number; runId: string; tapVersion: number } | null = null;
    for (let i = 0; i < 300 && real === null; i++) {
      real = (await evidenceOf(incident.id)).real as typeof real;
      if (real === null) await new Promise((r) => setTimeout(r, 100));
    }
    expect(real).toMatchObject({ source: 'tap-run', recordCount: 5, runId: run.body.runId, tapVersion: 2 });
  });

  it('blastRadius names the destination, the other pipelines loading the same table and the taps feeding it', async () => {
    const [incident] = await settled('tap=feeder', 1);
    const { blastRadius } = await evidenceOf(incident.id);
    expect(blastRadius.downstreamDatasets).toEqual([
      expect.objectContaining({ kind: 'postgres', coords: expect.stringContaining(table) }),
    ]);
    expect(blastRadius.downstreamPipelines).toEqual(['feed-copy']);
    expect(blastRadius.consumersFromContracts).toEqual(['tap:feeder']);
    // The job of the tap's first run (beforeAll) is the last write into the table before the change.
    const last = Date.parse(blastRadius.lastDownstreamRunAt);
    expect(last).toBeGreaterThanOrEqual(suiteStarted);
    expect(last).toBeLessThanOrEqual(Date.now());
  });

  it('generate opens a tap incident; the save adopting the generated version opens no second one', async () => {
    double.script({ json: { script: tapScript(5, false), packages: [] } });
    const gen = (await post('/tap/generate', { tapName: 'feeder', description: 'five rows' }).expect(200))
      .body as { scriptPath: string };
    const list = await settled('tap=feeder', 2);
    expect(list[0].summary).toContain('2 → 3');
    expect(list[0].verdict).toBe('pass');
    await post('/tap', { name: 'feeder', scriptPath: gen.scriptPath }).expect(200);
    await new Promise((r) => setTimeout(r, 1000));
    expect(await settled('tap=feeder', 2)).toHaveLength(2);
  });

  it('thresholds per pipeline: set, read, refused when out of range, and used by the next evidence', async () => {
    expect((await get('/pipelines/feed/incident-thresholds').expect(200)).body).toEqual({
      custom: false,
      thresholds: {
        maxRecordDeltaPct: 20,
        allowColumnRemoval: false,
        allowTypeChange: false,
        minDqPassRate: 0.9,
        maxNullRateIncrease: 0.1,
      },
    });
    const bad = await api.http
      .put('/api/v1/pipelines/feed/incident-thresholds')
      .send({ minDqPassRate: 2 })
      .expect(400);
    expect(bad.body.message).toContain('minDqPassRate');
    await api.http.put('/api/v1/pipelines/nope/incident-thresholds').send({}).expect(404);
    const set = await api.http
      .put('/api/v1/pipelines/feed/incident-thresholds')
      .send({ maxRecordDeltaPct: 150, allowColumnRemoval: true })
      .expect(200);
    expect(set.body).toMatchObject({
      custom: true,
      thresholds: { maxRecordDeltaPct: 150, allowColumnRemoval: true, minDqPassRate: 0.9 },
    });

    // Back to ten rows with a label: +100 % and a column added, within the pipeline's own limits.
    await post('/tap', { name: 'feeder', script: tapScript(10) }).expect(200);
    const [latest] = await settled('tap=feeder', 3);
    const ev = await evidenceOf(latest.id);
    expect(ev.thresholds).toMatchObject({ maxRecordDeltaPct: 150, allowColumnRemoval: true });
    expect(ev.diff.recordDeltaPct).toBe(100);
    expect(ev.verdict).toBe('pass');

    const cleared = await api.http.delete('/api/v1/pipelines/feed/incident-thresholds').expect(200);
    expect(cleared.body).toMatchObject({ custom: false, thresholds: { maxRecordDeltaPct: 20 } });
    // Verify recomputes with the thresholds in force now, and restores nothing of a tap.
    const verified = (await post(`/incidents/${latest.id}/verify`).expect(200)).body as Item & {
      tapVersions: { before: number; after: number };
    };
    expect(verified).toMatchObject({ verdict: 'fail', tapVersions: { before: 3, after: 4 } });
    expect((await evidenceOf(latest.id)).thresholds).toMatchObject({ maxRecordDeltaPct: 20 });
    expect((await get('/tap').query({ name: 'feeder' }).expect(200)).body.script).toBe(tapScript(10));
  });

  it("a pipeline's own thresholds decide its CodeGen incidents too", async () => {
    const orders = `orders_${env.replace(/[^a-z0-9]/g, '_')}`;
    double.script({ json: { script: DQ_V1 } });
    await post(
      '/pipeline',
      csvPipeline(
        'orders',
        orders,
        [
          ['id', 'int'],
          ['amount', 'double'],
        ],
        { dataQuality: { aiInstruction: 'Reject negative amounts.' }, catalog: 'sales' },
      ),
    ).expect(200);
    const csv =
      'id,amount\n' +
      Array.from({ length: 10 }, (_, i) => `${i + 1},${i === 3 ? -5 : (i + 1) * 30}`).join('\n') +
      '\n';
    // The pipeline's save writes its first script in the background; a job before that has none to run
    // (under load the upload came first, and the baseline was a failed job).
    await until('the first data-quality script to be written', async () =>
      Boolean((await get('/pipelines/orders/codegen-scripts').expect(200)).body.dataQuality?.script),
    );
    await waitForJob(api.http, await upload(api.http, 'orders', csv, 'orders.csv'));
    // Under the defaults this change fails (incidents.e2e-spec): 4 of 10 rejected, 33 % fewer rows.
    await api.http
      .put('/api/v1/pipelines/orders/incident-thresholds')
      .send({ maxRecordDeltaPct: 50, minDqPassRate: 0.5 })
      .expect(200);
    double.script({ json: { script: DQ_STRICT } });
    await post('/pipelines/orders/codegen-scripts/dataQuality/regenerate').expect(200);
    const [incident] = await settled('pipeline=orders', 1);
    const ev = await evidenceOf(incident.id);
    expect(ev.thresholds).toMatchObject({ maxRecordDeltaPct: 50, minDqPassRate: 0.5 });
    expect(ev.checks.every((c) => c.passed)).toBe(true);
    expect(incident.verdict).toBe('pass');
  });

  it("values need search:query on the destination's database; a tap's incident needs tap:read", async () => {
    const as = (key: string, id: string) =>
      keyed.http.get(`/api/v1/incidents/${id}/evidence`).set('x-api-key', key);
    // search:query scoped to the pipeline's catalog reads no row of its database (POST /query/postgres
    // checks the database): no values.
    const byCatalog = await issueKey(keyed.http, admin, 'inc-by-catalog', {
      capabilities: ['pipeline:read', 'tap:read', 'search:query:catalog=sales'],
    });
    const withoutValues = async (id: string): Promise<void> => {
      const ev = (await as(byCatalog, id).expect(200)).body as Evidence;
      for (const c of [...ev.baseline.columns, ...ev.candidate.columns]) {
        expect(c.topK).toBeUndefined();
        expect(c.quantiles).toBeUndefined();
      }
    };
    const [pipelineIncident] = await settled('pipeline=orders', 1);
    await withoutValues(pipelineIncident.id);
    const [tapIncident] = await settled('tap=feeder', 3);
    await withoutValues(tapIncident.id);
    const analyst = await issueKey(keyed.http, admin, 'inc-analyst', {
      capabilities: ['pipeline:read', 'tap:read', 'search:query:database=tapyard_test'],
    });
    const full = (await as(analyst, tapIncident.id).expect(200)).body as Evidence;
    expect(full.candidate.columns.find((c) => c.name === 'label')?.topK).toEqual(
      expect.arrayContaining([{ value: 'Zanzibar', count: 3 }]),
    );
    expect(full.candidate.columns.find((c) => c.name === 'amount')?.quantiles).toBeDefined();

    // Without tap:read a tap's incident is as absent as the tap, and is not listed.
    const pipelinesOnly = await issueKey(keyed.http, admin, 'inc-pipelines-only', {
      capabilities: ['pipeline:read'],
    });
    await as(pipelinesOnly, tapIncident.id).expect(404);
    await keyed.http.get(`/api/v1/incidents/${tapIncident.id}`).set('x-api-key', pipelinesOnly).expect(404);
    const listed = (await keyed.http.get('/api/v1/incidents').set('x-api-key', pipelinesOnly).expect(200))
      .body as Item[];
    expect(listed.map((i) => i.subject)).toEqual(['pipeline']);
    // Resolving a tap's incident needs tap:update on the tap besides the route's pipeline:update.
    const reader = await issueKey(keyed.http, admin, 'inc-tap-reader', {
      capabilities: ['pipeline:read', 'pipeline:update', 'tap:read'],
    });
    await keyed.http
      .post(`/api/v1/incidents/${tapIncident.id}/resolve`)
      .set('x-api-key', reader)
      .send({})
      .expect(404);
  });

  it('the evidence runs with the rights of whoever made the change: without tap:run nothing runs', async () => {
    const editor = await issueKey(keyed.http, admin, 'inc-tap-editor', {
      capabilities: ['tap:read', 'tap:update', 'pipeline:read', 'pipeline:upload'],
    });
    await keyed.http
      .post('/api/v1/tap')
      .set('x-api-key', editor)
      .send({ name: 'feeder', script: tapScript(7) })
      .expect(200);
    const [latest] = await settled('tap=feeder', 4);
    expect(latest.verdict).toBe('needs-human');
    const ev = await evidenceOf(latest.id);
    expect(ev.candidate.recordCount).toBe(0);
    expect(ev.baseline.recordCount).toBe(0);
    const runs = ev.checks.find((c) => c.name === 'candidate-runs')!;
    expect(runs.passed).toBe(false);
    expect(runs.observed).toContain('tap:run');
  });

  it("each version's evidence runs with its own author's grant, narrowed to the changer's rights", async () => {
    // One record per pipeline the script's run key may read.
    const lister = `import json, os, urllib.request

def fetch():
    base = "http://%s:%s/api/v1" % (os.environ["SERVICE_PLATFORM_HOST"], os.environ["SERVICE_PLATFORM_PORT"])
    req = urllib.request.Request(base + "/pipelines", headers={"x-api-key": os.environ["SERVICE_PLATFORM_API_KEY"]})
    with urllib.request.urlopen(req, timeout=10) as r:
        for p in json.loads(r.read()):
            yield {"name": p["name"]}
`;
    const send = (key: string, path: string, body: object) =>
      keyed.http.post(`/api/v1${path}`).set('x-api-key', key).send(body).expect(200);
    await send(admin, '/pipeline', {
      ...csvPipeline('ops-feed', `${table}_ops`, [['n', 'int']]),
      catalog: 'ops',
    });
    const sales = await issueKey(keyed.http, admin, 'inc-sales-author', {
      capabilities: ['tap:*:catalog=sales', 'pipeline:*:catalog=sales'],
    });
    await send(sales, '/tap', { name: 'watcher', catalog: 'sales', script: lister });
    // An admin edits the sales author's tap: the version before is still the sales author's code.
    await send(admin, '/tap', { name: 'watcher', script: `${lister}# reviewed\n` });
    const [incident] = await settled('tap=watcher', 1);
    const ev = await evidenceOf(incident.id);
    const seen = async (key: string): Promise<number> =>
      ((await keyed.http.get('/api/v1/pipelines').set('x-api-key', key).expect(200)).body as unknown[])
        .length;
    // What the sales author reads (its catalog), not what the admin reads (every catalog, ops-feed too).
    expect(ev.baseline.recordCount).toBe(await seen(sales));
    expect(ev.candidate.recordCount).toBe(await seen(admin));
    expect(await seen(sales)).toBeLessThan(await seen(admin));
  }, 60_000);

  it('tap incidents go with their tap', async () => {
    await api.http.delete('/api/v1/tap').query({ name: 'feeder' }).expect(200);
    expect((await get('/incidents?tap=feeder').expect(200)).body).toEqual([]);
  });
});
