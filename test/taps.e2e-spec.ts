import { Pool } from 'pg';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_DATABASE_URL, TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { waitForPublisher } from './support/ingest';
import { TestMinio } from './support/minio';

const ROWS_SCRIPT = `
import os
def fetch():
    n = int(os.environ.get("SERVICE_TAP_TEST_LIMIT", "25"))
    for i in range(n):
        yield {"Order ID": i, "growth%": i * 1.5, "Customer Name": f"c{i}"}
`;

describe('taps: configuration, test and run modes, history (real Python, Postgres, MinIO)', () => {
  const env = uniqueEnvironment('taps');
  const schema = `taps_${env.replace(/[^a-z0-9]/g, '_')}`.slice(0, 60);
  let api: TestApi;
  let api2: TestApi;
  let worker: TestWorker;
  let pg: Pool;
  const minio = new TestMinio();
  const tapsBucket = `${env}-taps`;

  beforeAll(async () => {
    const flags = { TAPYARD_ENV: env, ...TEST_OBJECT_STORE, STATUS_PROGRESS_MS: '1000' };
    api = await startApi(flags);
    api2 = await startApi(flags);
    worker = await startWorker(flags);
    pg = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
    await pg.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await api.http
      .post('/api/v1/pipeline')
      .send({
        name: 'orders',
        source: {
          fileAttributes: { format: 'csv' },
          schemaProperties: { fields: [{ name: 'order_id', type: 'int' }] },
        },
        destination: { database: { schema, table: 'orders' } },
      })
      .expect(200);
  }, 60000);
  afterAll(async () => {
    await pg.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pg.end();
    await worker.close();
    await api2.close();
    await api.close();
  });

  it('stores a script as a new version, serves it, and keeps older versions for rollback', async () => {
    const first = await api.http
      .post('/api/v1/tap')
      .send({ name: 'orders_tap', description: 'orders', script: ROWS_SCRIPT, targetPipeline: 'orders' })
      .expect(200);
    expect(first.body.scriptPath).toMatch(/^tap-scripts\/orders_tap_[A-Za-z0-9-]+\.py$/);
    expect(first.body).toMatchObject({ tapType: 'structured', enabled: false, packages: [], catalog: null });
    const got = await api.http.get('/api/v1/tap').query({ name: 'orders_tap' }).expect(200);
    expect(got.body.script).toBe(ROWS_SCRIPT);
    expect(got.body).not.toHaveProperty('scriptMissing');

    const second = await api.http
      .post('/api/v1/tap')
      .send({ name: 'orders_tap', script: ROWS_SCRIPT + '\n# v2\n' })
      .expect(200);
    expect(second.body.scriptPath).not.toBe(first.body.scriptPath);
    // Fields left out keep their values.
    expect(second.body).toMatchObject({ description: 'orders', targetPipeline: 'orders' });
    const keys = await minio.keys(tapsBucket, 'tap-scripts/orders_tap_');
    expect(keys).toEqual(expect.arrayContaining([first.body.scriptPath, second.body.scriptPath]));
    // Roll back by pointing at the earlier version.
    await api.http
      .post('/api/v1/tap')
      .send({ name: 'orders_tap', scriptPath: first.body.scriptPath })
      .expect(200);
    expect((await api.http.get('/api/v1/tap').query({ name: 'orders_tap' })).body.script).toBe(ROWS_SCRIPT);
    const list = await api.http.get('/api/v1/taps').expect(200);
    expect(list.body.map((t: { name: string }) => t.name)).toContain('orders_tap');
    await api.http.post('/api/v1/tap').send({ name: 'finance_tap', catalog: 'finance' }).expect(200);
    const finance = await api.http.get('/api/v1/taps').query({ catalog: 'finance' }).expect(200);
    expect(finance.body.map((t: { name: string }) => t.name)).toEqual(['finance_tap']);
    const uncataloged = await api.http.get('/api/v1/taps').query({ catalog: '' }).expect(200);
    expect(uncataloged.body.map((t: { name: string }) => t.name)).toContain('orders_tap');
    expect(uncataloged.body.map((t: { name: string }) => t.name)).not.toContain('finance_tap');
  });

  it('follows the spec for script: null and scriptMissing', async () => {
    await api.http.post('/api/v1/tap').send({ name: 'never_generated' }).expect(200);
    const never = await api.http.get('/api/v1/tap').query({ name: 'never_generated' }).expect(200);
    expect(never.body.script).toBeNull();
    expect(never.body).not.toHaveProperty('scriptMissing');

    const saved = await api.http
      .post('/api/v1/tap')
      .send({ name: 'lost_script', script: ROWS_SCRIPT })
      .expect(200);
    await minio.client.removeObject(tapsBucket, saved.body.scriptPath);
    const lost = await api.http.get('/api/v1/tap').query({ name: 'lost_script' }).expect(200);
    expect(lost.body).toMatchObject({ script: null, scriptMissing: true, scriptPath: saved.body.scriptPath });
    // Running it is refused with the reason, and the attempt is in the history.
    const run = await api.http
      .post('/api/v1/tap/run')
      .send({ name: 'lost_script', mode: 'test' })
      .expect(409);
    expect(run.body.message).toMatch(/missing from the object store/);
    const never409 = await api.http
      .post('/api/v1/tap/run')
      .send({ name: 'never_generated', mode: 'test' })
      .expect(409);
    expect(never409.body.message).toMatch(/no script/);
  });

  it('refuses bad names, a tapType change, invalid cron and foreign script paths with 400', async () => {
    for (const name of ['../x', 'a/b', '', '.hidden', 'x'.repeat(129)]) {
      const res = await api.http.post('/api/v1/tap').send({ name }).expect(400);
      expect(res.body.message).toMatch(/name/);
    }
    await api.http.get('/api/v1/tap').query({ name: '../x' }).expect(400);
    const change = await api.http
      .post('/api/v1/tap')
      .send({ name: 'orders_tap', tapType: 'document' })
      .expect(400);
    expect(change.body.message).toMatch(/tapType cannot change/);
    const cron = await api.http
      .post('/api/v1/tap')
      .send({ name: 'bad_cron', cronExpression: '0 0 * * *' })
      .expect(400);
    expect(cron.body.message).toMatch(/field/);
    const both = await api.http
      .post('/api/v1/tap')
      .send({ name: 'bad_cron', cronExpression: '0 0 12 1 * MON' })
      .expect(400);
    expect(both.body.message).toMatch(/day-of-month|day-of-week/);
    await api.http.get('/api/v1/tap').query({ name: 'bad_cron' }).expect(404);
    const foreign = await api.http
      .post('/api/v1/tap')
      .send({ name: 'thief', scriptPath: 'tap-scripts/orders_tap_x.py' })
      .expect(400);
    expect(foreign.body.message).toMatch(/scriptPath/);
    await api.http.get('/api/v1/tap').query({ name: 'nope' }).expect(404);
  });

  it('tests an unsaved script: 20 sample rows, normalised columns, the count, logs and the test limit', async () => {
    const res = await api.http
      .post('/api/v1/tap/test')
      .send({
        name: 'scratch',
        script: ROWS_SCRIPT.replace('def fetch', 'print("hello from the tap")\ndef fetch'),
      })
      .expect(200);
    expect(res.body).toMatchObject({
      recordCount: 25,
      recordsTruncated: true,
      dataType: 'csv',
      columns: ['order_id', 'growth_percent', 'customer_name'],
      error: null,
      aiExplanation: null,
    });
    expect(res.body.records).toHaveLength(20);
    expect(res.body.records[3]).toEqual({ order_id: 3, growth_percent: 4.5, customer_name: 'c3' });
    expect(res.body.logs).toContain('hello from the tap');
    expect(res.body.durationMs).toBeGreaterThan(0);
    const limited = await api.http
      .post('/api/v1/tap/test')
      .query({ testLimit: 7 })
      .send({ name: 'scratch', script: ROWS_SCRIPT })
      .expect(200);
    expect(limited.body).toMatchObject({ recordCount: 7, recordsTruncated: false });
    await api.http.get('/api/v1/tap').query({ name: 'scratch' }).expect(404);
  });

  it('gives the script only its secret, the SERVICE_* variables and nothing of the platform, and masks secrets', async () => {
    await api.http
      .put('/api/v1/secrets/tap_creds')
      .send({ API_TOKEN: 'sk-very-secret-value-42', REGION: 'eu' })
      .expect(200);
    const script = `
import os
def fetch():
    print("token is", os.environ.get("API_TOKEN"))
    return [{k: v for k, v in sorted(os.environ.items())}]
`;
    const res = await api.http
      .post('/api/v1/tap/test')
      .send({ name: 'env_probe', script, secretName: 'tap_creds' })
      .expect(200);
    expect(res.body.error).toBeNull();
    const seen = res.body.records[0] as Record<string, string>;
    expect(seen.api_token).toBe('sk-very-secret-value-42');
    expect(seen.region).toBe('eu');
    expect(seen.service_postgres_database).toBe(api.config.database.name);
    expect(seen.service_platform_port).toBe(String(api.config.port));
    expect(seen).toHaveProperty('service_platform_host');
    expect(seen).toHaveProperty('service_mongodb_database');
    expect(seen).not.toHaveProperty('service_tap_test_limit');
    for (const leak of [
      'database_url',
      'redis_url',
      'tapyard_master_key',
      'tapyard_env',
      'object_store_secret_key',
    ]) {
      expect(seen).not.toHaveProperty(leak);
    }
    expect(res.body.logs).toContain('token is ***');
    expect(res.body.logs).not.toContain('sk-very-secret-value-42');
    for (const name of [`${env}/api-keys`, 'api-key-mappings']) {
      const refused = await api.http
        .post('/api/v1/tap')
        .send({ name: 'thief', secretName: name })
        .expect(400);
      expect(refused.body.message).toMatch(/access state/);
      await api.http.post('/api/v1/tap/test').send({ name: 'thief', script, secretName: name }).expect(400);
    }
    const missing = await api.http
      .post('/api/v1/tap/test')
      .send({ name: 'env_probe', script, secretName: 'no_such_secret' })
      .expect(400);
    expect(missing.body.message).toMatch(/no_such_secret/);
  });

  it('reports broken scripts in `error` and keeps serving', async () => {
    const cases: [string, RegExp][] = [
      ['x = 1\n', /fetch/],
      ['def fetch(:\n  pass\n', /syntax/i],
      ['def fetch():\n    raise ValueError("upstream said no")\n', /ValueError: upstream said no/],
      ['def fetch():\n    return 42\n', /iterable|int/],
      [
        'import datetime\ndef fetch():\n    return [{"at": datetime.datetime(2020, 1, 1)}]\n',
        /JSON|datetime/,
      ],
      ['def fetch():\n    return [1, 2]\n', /record 0 is a number/],
      ['import no_such_module_xyz\ndef fetch():\n    return []\n', /no_such_module_xyz/],
    ];
    for (const [script, reason] of cases) {
      const res = await api.http.post('/api/v1/tap/test').send({ name: 'broken', script }).expect(200);
      expect(res.body.error).toMatch(reason);
    }
    await api.http.get('/api/v1/health/services').expect(200);
  });

  it("returns a runtime error with the script's own frames: file and line", async () => {
    const script = [
      'import json',
      'def parse(page):',
      '    return json.loads(page)',
      'def fetch():',
      '    yield {"n": 1}',
      '    yield parse("{not json")',
    ].join('\n');
    await api.http.post('/api/v1/tap').send({ name: 'frames_tap', script }).expect(200);
    const res = await api.http.post('/api/v1/tap/run').send({ name: 'frames_tap', mode: 'test' }).expect(200);
    // A failed run is `success` with its failure in `error` (spec: run result status).
    expect(res.body.status).toBe('success');
    const error: string = res.body.error;
    expect(error).toMatch(/^fetch\(\) raised json\.decoder\.JSONDecodeError: /);
    // Innermost last, as Python prints them; only the script's file, never the harness or the library.
    expect(error).toMatch(/File "frames_tap\.py", line 6, in fetch\n\s+yield parse\("\{not json"\)/);
    expect(error).toMatch(/File "frames_tap\.py", line 3, in parse\n\s+return json\.loads\(page\)/);
    expect(error.indexOf('line 6, in fetch')).toBeLessThan(error.indexOf('line 3, in parse'));
    expect(error).not.toMatch(/harness|json\/decoder\.py|\/tmp\//);
  });

  it('refuses to save a script that does not parse: 400 with the line', async () => {
    const saved = await api.http
      .post('/api/v1/tap')
      .send({ name: 'parse_tap', script: ROWS_SCRIPT })
      .expect(200);
    const broken = 'import os\n\ndef fetch():\n    return [{"a": 1}\n\nx = 2\n';
    const res = await api.http.post('/api/v1/tap').send({ name: 'parse_tap', script: broken }).expect(400);
    expect(res.body.code).toBe('tap.script_syntax');
    expect(res.body.message).toMatch(/^the script does not parse: line 4: /);
    expect(res.body.message).toContain('return [{"a": 1}');
    // Nothing changed: the tap keeps its script.
    const got = await api.http.get('/api/v1/tap').query({ name: 'parse_tap' }).expect(200);
    expect(got.body).toMatchObject({ scriptPath: saved.body.scriptPath, script: ROWS_SCRIPT });
    // A new tap with such a script is not created.
    await api.http.post('/api/v1/tap').send({ name: 'parse_new', script: 'def fetch(:\n' }).expect(400);
    await api.http.get('/api/v1/tap').query({ name: 'parse_new' }).expect(404);
  });

  it('names an unknown package', async () => {
    const res = await api.http
      .post('/api/v1/tap/test')
      .send({
        name: 'pkgs',
        script: 'def fetch():\n    return []\n',
        packages: ['tapyard-no-such-package-xyz==1.0'],
      })
      .expect(200);
    expect(res.body.error).toMatch(/tapyard-no-such-package-xyz/);
  }, 120000);

  it('runs into Postgres under one publisher token, adding new columns to the schema', async () => {
    const res = await api.http.post('/api/v1/tap/run').send({ name: 'orders_tap', mode: 'run' }).expect(200);
    expect(res.body).toMatchObject({
      tap: 'orders_tap',
      status: 'success',
      mode: 'run',
      targetPipeline: 'orders',
      persisted: true,
      recordCount: 25,
      dataType: 'csv',
      columns: ['order_id', 'growth_percent', 'customer_name'],
      error: null,
    });
    expect(res.body).not.toHaveProperty('records');
    expect(res.body.pipelineTokens).toHaveLength(1);
    const { rollup, events } = await waitForPublisher(api.http, res.body.publisherToken);
    // Schema contract `evolve` (the default): the job that added the columns says so.
    expect(rollup.status).toBe('warning');
    expect(events.find((e) => e.processName === 'JobRunner' && e.state === 'end')?.description).toMatch(
      /new columns added to the schema.*: growth_percent, customer_name$/,
    );
    expect(rollup.jobs.map((j) => j.pipelineToken)).toEqual(res.body.pipelineTokens);
    const rows = await pg.query(
      `SELECT order_id, growth_percent, customer_name FROM "${schema}".orders ORDER BY order_id`,
    );
    expect(rows.rowCount).toBe(25);
    expect(rows.rows[2]).toEqual({ order_id: 2, growth_percent: '3', customer_name: 'c2' });
    const def = await api.http.get('/api/v1/pipeline').query({ pipeline: 'orders' }).expect(200);
    expect(def.body.source.schemaProperties.fields.map((f: { name: string }) => f.name)).toEqual([
      'order_id',
      'growth_percent',
      'customer_name',
    ]);
  });

  it('debounces a second run within 5 s across API instances, but never test mode', async () => {
    // The previous test's run still holds the window: its claim is moved back past it rather than
    // waited out, so the pair below races for a free window whatever the machine's speed.
    const moved = await pg.query(
      `UPDATE tapyard.taps SET last_run_at = last_run_at - interval '1 minute'
        WHERE environment = $1 AND name = 'orders_tap' AND last_run_at IS NOT NULL`,
      [env],
    );
    expect(moved.rowCount).toBe(1);
    const [a, b] = await Promise.all([
      api.http.post('/api/v1/tap/run').send({ name: 'orders_tap', mode: 'run' }).expect(200),
      api2.http.post('/api/v1/tap/run').send({ name: 'orders_tap', mode: 'run' }).expect(200),
    ]);
    const statuses = [a.body.status, b.body.status].sort();
    expect(statuses).toEqual(['skipped', 'success']);
    const skipped = a.body.status === 'skipped' ? a.body : b.body;
    expect(skipped).toMatchObject({ persisted: false, persistedReason: 'debounced' });
    expect(skipped.error).toMatch(/started \d+(\.\d+)? s ago/);
    const test = await api.http
      .post('/api/v1/tap/run')
      .send({ name: 'orders_tap', mode: 'test' })
      .expect(200);
    expect(test.body).toMatchObject({
      status: 'success',
      persisted: false,
      persistedReason: 'test_mode',
      recordCount: 25,
    });
    expect(test.body.records).toHaveLength(20);
    expect(test.body.recordsTruncated).toBe(true);
    const done = a.body.status === 'success' ? a.body : b.body;
    await waitForPublisher(api.http, done.publisherToken);
  });

  it('reports no_target_pipeline, no_records and run_error, loading nothing from a failed script', async () => {
    await api.http.post('/api/v1/tap').send({ name: 'untargeted', script: ROWS_SCRIPT }).expect(200);
    const none = await api.http.post('/api/v1/tap/run').send({ name: 'untargeted', mode: 'run' }).expect(200);
    // Spec: recordCount is the records submitted; the logs say what the script yielded.
    expect(none.body).toMatchObject({
      persisted: false,
      persistedReason: 'no_target_pipeline',
      recordCount: 0,
    });
    expect(none.body.logs).toContain('the script yielded 25 record(s); none was submitted');

    await api.http
      .post('/api/v1/tap')
      .send({ name: 'empty', script: 'def fetch():\n    return []\n', targetPipeline: 'orders' })
      .expect(200);
    const empty = await api.http.post('/api/v1/tap/run').send({ name: 'empty', mode: 'run' }).expect(200);
    expect(empty.body).toMatchObject({
      persisted: false,
      persistedReason: 'no_records',
      recordCount: 0,
      columns: null,
    });

    const before = (await pg.query(`SELECT count(*)::int AS n FROM "${schema}".orders`)).rows[0].n;
    await api.http
      .post('/api/v1/tap')
      .send({
        name: 'half',
        script:
          'def fetch():\n    for i in range(10):\n        yield {"order_id": 1000 + i}\n    raise RuntimeError("page 2 failed")\n',
        targetPipeline: 'orders',
      })
      .expect(200);
    const half = await api.http.post('/api/v1/tap/run').send({ name: 'half', mode: 'run' }).expect(200);
    expect(half.body).toMatchObject({
      status: 'success',
      persisted: false,
      persistedReason: 'run_error',
      recordCount: 0,
    });
    expect(half.body.error).toMatch(/RuntimeError: page 2 failed/);
    expect((await pg.query(`SELECT count(*)::int AS n FROM "${schema}".orders`)).rows[0].n).toBe(before);
  });

  it('keeps the run history, most recent first, manual and test runs alike', async () => {
    const res = await api.http.get('/api/v1/tap/runs').query({ name: 'orders_tap' }).expect(200);
    const runs = res.body as { startedAt: string; mode: string; status: string; trigger: string }[];
    expect(runs.length).toBeGreaterThanOrEqual(4);
    const times = runs.map((r) => Date.parse(r.startedAt));
    expect([...times].sort((x, y) => y - x)).toEqual(times);
    expect(runs[0]).toMatchObject({
      mode: 'test',
      status: 'success',
      trigger: 'manual',
      persistedReason: 'test_mode',
    });
    expect(runs.map((r) => r.status)).toEqual(expect.arrayContaining(['success', 'skipped']));
    expect(Object.keys(runs[0]).sort()).toEqual(
      [
        'runId',
        'tap',
        'mode',
        'trigger',
        'status',
        'startedAt',
        'finishedAt',
        'durationMs',
        'recordCount',
        'persisted',
        'persistedReason',
        'publisherToken',
        'error',
      ].sort(),
    );
    await api.http.get('/api/v1/tap/runs').query({ name: 'nope' }).expect(404);
  });

  it('keeps only the last 50 runs', async () => {
    await api.http
      .post('/api/v1/tap')
      .send({ name: 'busy', script: 'def fetch():\n    return []\n' })
      .expect(200);
    // 51 earlier runs as finished runs leave them, a day old and scheduled (53 sandboxed runs took
    // half a minute); each of the two real runs below trims the history when it finishes.
    const seeded = await pg.query<{ started_at: Date }>(
      `INSERT INTO tapyard.tap_runs (run_id, environment, tap, mode, trigger, status, started_at, finished_at)
       SELECT gen_random_uuid(), $1, 'busy', 'run', 'schedule', 'success', t, t
       FROM generate_series(0, 50) AS i, LATERAL (SELECT now() - interval '1 day' + i * interval '1 minute') AS s(t)
       RETURNING started_at`,
      [env],
    );
    expect(seeded.rows).toHaveLength(51);
    for (let i = 0; i < 2; i++)
      await api.http.post('/api/v1/tap/run').send({ name: 'busy', mode: 'test' }).expect(200);
    const stored = await pg.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM tapyard.tap_runs WHERE environment = $1 AND tap = 'busy'`,
      [env],
    );
    expect(stored.rows[0].n).toBe(50);
    const res = await api.http.get('/api/v1/tap/runs').query({ name: 'busy' }).expect(200);
    const runs = res.body as { mode: string; trigger: string; startedAt: string }[];
    expect(runs).toHaveLength(50);
    // The newest kept: both real runs, then the 48 newest earlier ones (the three oldest are gone).
    expect(runs.slice(0, 2).map((r) => [r.mode, r.trigger])).toEqual([
      ['test', 'manual'],
      ['test', 'manual'],
    ]);
    const earlier = seeded.rows.map((r) => r.started_at.getTime()).sort((a, b) => b - a);
    expect(runs.slice(2).map((r) => Date.parse(r.startedAt))).toEqual(earlier.slice(0, 48));
  }, 120000);

  it('deletes a tap with every script version and its history', async () => {
    const before = await minio.keys(tapsBucket, 'tap-scripts/orders_tap_');
    expect(before.length).toBeGreaterThanOrEqual(2);
    await api.http.post('/api/v1/tap').send({ name: 'orders_tap_b', script: ROWS_SCRIPT }).expect(200);
    await api.http.delete('/api/v1/tap').query({ name: 'orders_tap' }).expect(200);
    expect(await minio.keys(tapsBucket, 'tap-scripts/orders_tap_')).toHaveLength(1); // orders_tap_b's only
    await api.http.get('/api/v1/tap').query({ name: 'orders_tap' }).expect(404);
    await api.http.get('/api/v1/tap').query({ name: 'orders_tap_b' }).expect(200);
    await api.http.delete('/api/v1/tap').query({ name: 'orders_tap' }).expect(404);
  });
});
