import { Pool } from 'pg';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_DATABASE_URL, TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { waitForPublisher } from './support/ingest';

/** Long runs stream into their job while the script still runs (TAP_STREAM_AFTER is 100 here). */
describe('tap runs streaming into their load (real Postgres)', () => {
  const env = uniqueEnvironment('tapstream');
  const schema = `ts_${env.replace(/[^a-z0-9]/g, '_')}`.slice(0, 60);
  let api: TestApi;
  let worker: TestWorker;
  let pg: Pool;

  const rollup = (token: string) => waitForPublisher(api.http, token);
  // The loaded columns (the load id each row carries is checked in write-modes.e2e-spec.ts).
  const rows = async (table: string) =>
    (await pg.query(`SELECT * FROM "${schema}"."${table}" ORDER BY n`)).rows.map(
      ({ _tapyard_load_id: _id, ...row }) => row,
    );
  const target = async (name: string) =>
    api.http
      .post('/api/v1/pipeline')
      .send({
        name,
        source: {
          fileAttributes: { format: 'csv' },
          schemaProperties: { fields: [{ name: 'n', type: 'int' }] },
        },
        destination: { database: { schema, table: name } },
      })
      .expect(200);

  beforeAll(async () => {
    const flags = { TAPYARD_ENV: env, ...TEST_OBJECT_STORE, TAP_STREAM_AFTER: '100' };
    api = await startApi(flags);
    worker = await startWorker(flags);
    pg = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
    await pg.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
  }, 60000);
  afterAll(async () => {
    await pg.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pg.end();
    await worker.close();
    await api.close();
  });

  it('loads a long run in one job that starts while the script runs', async () => {
    await target('streamed');
    // The harness sends a batch when a record comes 50 ms after the last one: pauses split the stream.
    const script =
      'import time\ndef fetch():\n    for i in range(5000):\n        if i % 1000 == 0:\n            time.sleep(0.2)\n        yield {"n": i, "Label": f"row {i}"}\n';
    await api.http.post('/api/v1/tap').send({ name: 'long', script, targetPipeline: 'streamed' }).expect(200);
    const run = await api.http.post('/api/v1/tap/run').send({ name: 'long', mode: 'run' }).expect(200);
    expect(run.body).toMatchObject({ status: 'success', persisted: true, recordCount: 5000 });
    expect(run.body.pipelineTokens).toHaveLength(1);
    const { rollup: r, events } = await rollup(run.body.publisherToken);
    // Schema contract `evolve` (the default): the job added `label` to the schema, and says so.
    expect(r.status).toBe('warning');
    expect(events.find((e) => e.processName === 'JobRunner' && e.state === 'end')?.description).toMatch(
      /new columns added to the schema.*: label$/,
    );
    const notifier = events.filter((e) => e.processName === 'StreamNotifier').map((e) => e.description);
    expect(notifier[notifier.length - 1]).toMatch(/received 5000 records .* loaded them as they came/);
    // The job began before the script had finished.
    const jobBegin = events.find((e) => e.processName === 'JobRunner' && e.state === 'begin')!;
    const received = events.find((e) => e.processName === 'StreamNotifier' && e.state === 'end')!;
    expect(jobBegin.epoch).toBeLessThan(received.epoch);
    const loaded = await rows('streamed');
    expect(loaded).toHaveLength(5000);
    expect(loaded[4999]).toEqual({ n: 4999, label: 'row 4999' });
  }, 60000);

  it('loads nothing when the script fails after the job started', async () => {
    await target('failing');
    const script =
      'import time\ndef fetch():\n    for i in range(3000):\n        if i == 1000:\n            time.sleep(0.5)\n        yield {"n": i}\n    raise ConnectionError("source went away")\n';
    await api.http
      .post('/api/v1/tap')
      .send({ name: 'breaks', script, targetPipeline: 'failing' })
      .expect(200);
    const run = await api.http.post('/api/v1/tap/run').send({ name: 'breaks', mode: 'run' }).expect(200);
    expect(run.body).toMatchObject({
      status: 'success',
      persisted: false,
      persistedReason: 'run_error',
      recordCount: 0,
    });
    expect(run.body.error).toMatch(/ConnectionError: source went away/);
    const { rollup: r } = await rollup(run.body.publisherToken);
    expect(r.status).toBe('error');
    expect(r.jobs[0].lastError!.description).toMatch(/the tap run failed: .*source went away/);
    const exists = await pg.query(`SELECT to_regclass('"${schema}".failing') AS t`);
    if (exists.rows[0].t) expect(await rows('failing')).toEqual([]);
  }, 60000);

  // The harness sends a batch when a record comes 50 ms after the last one. In the two tests below a
  // short pause sends the first records on their own (they start the streaming job), and a long one
  // gives the platform time to read them before the new key is written: a platform that read both at
  // once would see the key before the job started, and not supersede anything.
  it('restarts the load when a key first appears after the job started, losing nothing', async () => {
    await target('late');
    const script =
      'import time\ndef fetch():\n    for i in range(2000):\n        if i == 500:\n            time.sleep(0.1)\n        if i == 501:\n            time.sleep(1.5)\n        row = {"n": i}\n        if i >= 1500:\n            row["Closed At"] = f"day {i}"\n        yield row\n';
    await api.http.post('/api/v1/tap').send({ name: 'sparse', script, targetPipeline: 'late' }).expect(200);
    const run = await api.http.post('/api/v1/tap/run').send({ name: 'sparse', mode: 'run' }).expect(200);
    expect(run.body).toMatchObject({
      status: 'success',
      persisted: true,
      recordCount: 2000,
      columns: ['n', 'closed_at'],
    });
    expect(run.body.pipelineTokens).toHaveLength(2);
    const { rollup: r, events } = await rollup(run.body.publisherToken);
    // The superseded job ends success; the one that loaded added closed_at (schema contract `evolve`).
    expect(r.jobs.map((j) => j.status).sort()).toEqual(['success', 'warning']);
    expect(events.some((e) => /nothing loaded here: .*'Closed At'/.test(e.description))).toBe(true);
    expect(events.some((e) => /new columns added to the schema.*: closed_at$/.test(e.description))).toBe(
      true,
    );
    const loaded = await rows('late');
    expect(loaded).toHaveLength(2000);
    expect(loaded[1499]).toEqual({ n: 1499, closed_at: null });
    expect(loaded[1500]).toEqual({ n: 1500, closed_at: 'day 1500' });
  }, 60000);

  it("commits an incremental tap's state with the job that loaded, not the superseded one", async () => {
    await target('bookmarked');
    const script =
      'import time\ndef fetch(state):\n    for i in range(state.get("next", 0), 400):\n        if i == 150:\n            time.sleep(0.1)\n        if i == 200:\n            time.sleep(2)\n' +
      '        row = {"n": i}\n        if i >= 300:\n            row["Late"] = "x"\n        state["next"] = i + 1\n        yield row\n';
    await api.http
      .post('/api/v1/tap')
      .send({ name: 'marked', script, targetPipeline: 'bookmarked' })
      .expect(200);
    const run = await api.http.post('/api/v1/tap/run').send({ name: 'marked', mode: 'run' }).expect(200);
    expect(run.body.pipelineTokens).toHaveLength(2);
    const { rollup: r } = await rollup(run.body.publisherToken);
    // The one that loaded added `late` (schema contract `evolve`: warning); a warning without a
    // destination error still commits the state.
    expect(r.jobs.map((j) => j.status).sort()).toEqual(['success', 'warning']);
    const state = await api.http.get('/api/v1/tap/state').query({ name: 'marked' }).expect(200);
    // The streaming job was superseded and loaded nothing: the state names the job that loaded.
    expect(state.body).toMatchObject({ state: { next: 400 }, pipelineToken: run.body.pipelineTokens[1] });
    expect(await rows('bookmarked')).toHaveLength(400);
  }, 60000);
});
