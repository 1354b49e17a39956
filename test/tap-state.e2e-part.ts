import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { JobRef, StatusService } from '@tapyard/status';
import { TapStates } from '@tapyard/taps';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { issueKey, newBootstrapKey } from './support/auth';
import { TEST_DATABASE_URL, TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { RollupAnswer } from './support/ingest';
import { until } from './support/wait';

/** Each run reads the ids after its bookmark and moves the bookmark to the last id it yielded. */
const CURSOR_SCRIPT = `
def fetch(state):
    since = state.get("last_id", 0)
    for i in range(since + 1, since + 4):
        state["last_id"] = i
        yield {"id": i}
`;

/** Moves the bookmark far ahead, but its records cannot load: every one is rejected, the job fails. */
const FAILING_LOAD_SCRIPT = `
def fetch(state):
    state["last_id"] = 100
    return [{"id": "not a number"}, {"id": "nor this"}]
`;

interface StateBody {
  name: string;
  state: Record<string, unknown> | null;
  committedAt: string | null;
  pipelineToken: string | null;
  version: number;
}

/**
 * Incremental taps (issue 27, item 3): a real tap in the sandbox keeps a cursor between runs; the
 * state is committed only when the load it fed committed, in a real worker against real Postgres.
 */
describe('tap state: bookmarks committed with their load (sandbox, worker, Postgres)', () => {
  const env = uniqueEnvironment('tapstate');
  const schema = `tapstate_${env.replace(/[^a-z0-9]/g, '_')}`.slice(0, 60);
  const admin = newBootstrapKey();
  let api: TestApi;
  let worker: TestWorker;
  let pg: Pool;

  const get = (path: string, query: Record<string, string>, key = admin) =>
    api.http.get(`/api/v1${path}`).query(query).set('x-api-key', key);
  const post = (path: string, body: object, key = admin) =>
    api.http.post(`/api/v1${path}`).set('x-api-key', key).send(body);
  const put = (path: string, query: Record<string, string>, body: object, key = admin) =>
    api.http.put(`/api/v1${path}`).query(query).set('x-api-key', key).send(body);
  const state = async (): Promise<StateBody> =>
    (await get('/tap/state', { name: 'cursor' }).expect(200)).body as StateBody;
  const loadedIds = async (): Promise<number[]> =>
    (await pg.query(`SELECT id FROM "${schema}"."events" ORDER BY id`)).rows.map((r: { id: number }) => r.id);
  /** The rollup of a run's jobs once every one has ended. */
  const ended = async (publisherToken: string): Promise<RollupAnswer['rollup']> => {
    let rollup: RollupAnswer['rollup'] | null = null;
    await until(`the jobs of ${publisherToken} to end`, async () => {
      const res = await get('/pipeline/status', { publishertoken: publisherToken, withrollup: 'true' });
      rollup = res.status === 200 ? (res.body as RollupAnswer).rollup : null;
      return rollup !== null && rollup.allDone && rollup.jobs.length > 0;
    });
    return rollup as unknown as RollupAnswer['rollup'];
  };
  /** Runs the tap and waits until every job of the run has ended. */
  const runToEnd = async (): Promise<{ publisherToken: string; pipelineTokens: string[]; logs: string }> => {
    const res = await post('/tap/run', { name: 'cursor', mode: 'run' }).expect(200);
    expect(res.body).toMatchObject({ status: 'success', persisted: true });
    await ended(res.body.publisherToken);
    return res.body;
  };

  beforeAll(async () => {
    const flags = {
      TAPYARD_ENV: env,
      ...TEST_OBJECT_STORE,
      USE_API_KEYS: 'true',
      TAPYARD_BOOTSTRAP_API_KEY: admin,
      // Successive runs of one tap are the point here, not the debounce (taps.e2e-spec.ts tests it).
      TAP_DEBOUNCE_MS: '0',
    };
    api = await startApi(flags);
    worker = await startWorker(flags);
    pg = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
    await pg.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await post('/pipeline', {
      name: 'events',
      source: {
        fileAttributes: { format: 'csv' },
        schemaProperties: { fields: [{ name: 'id', type: 'int' }] },
      },
      destination: { database: { schema, table: 'events' } },
    }).expect(200);
    await post('/tap', { name: 'cursor', script: CURSOR_SCRIPT, targetPipeline: 'events' }).expect(200);
  }, 60_000);
  afterAll(async () => {
    await pg.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pg.end();
    await worker.close();
    await api.close();
  });

  it('has no state before the first run', async () => {
    expect(await state()).toEqual({
      name: 'cursor',
      state: null,
      committedAt: null,
      pipelineToken: null,
      version: 0,
    });
  });

  it('commits the cursor with its load; the second run starts from the bookmark', async () => {
    const first = await runToEnd();
    const afterFirst = await state();
    expect(afterFirst).toMatchObject({ state: { last_id: 3 }, version: 1 });
    expect(afterFirst.pipelineToken).toBe(first.pipelineTokens.at(-1));
    expect(Date.parse(afterFirst.committedAt as string)).not.toBeNaN();
    expect(await loadedIds()).toEqual([1, 2, 3]);

    await runToEnd();
    expect((await state()).state).toEqual({ last_id: 6 });
    // The second run read the bookmark: ids 4-6, nothing loaded twice.
    expect(await loadedIds()).toEqual([1, 2, 3, 4, 5, 6]);
  }, 120_000);

  it('keeps the old bookmark when the load the run fed fails', async () => {
    await post('/tap', { name: 'cursor', script: FAILING_LOAD_SCRIPT }).expect(200);
    const failed = await runToEnd();
    expect((await ended(failed.publisherToken)).jobs.map((j) => j.status)).toEqual(['error']);
    // The script succeeded and moved its cursor to 100; the load did not commit, so neither does the state.
    expect(await state()).toMatchObject({ state: { last_id: 6 }, version: 2 });
    const history = (await get('/tap/state/history', { name: 'cursor' }).expect(200)).body;
    expect(history[0]).toMatchObject({
      version: 3,
      state: { last_id: 100 },
      status: 'discarded',
      source: 'run',
      pipelineTokens: failed.pipelineTokens,
      reason: expect.stringMatching(/^its load did not commit: job .* ended error/),
    });
    expect(history.map((h: { version: number; status: string }) => [h.version, h.status])).toEqual([
      [3, 'discarded'],
      [2, 'committed'],
      [1, 'committed'],
    ]);

    // The good script again: it resumes from 6.
    await post('/tap', { name: 'cursor', script: CURSOR_SCRIPT }).expect(200);
    await runToEnd();
    expect((await state()).state).toEqual({ last_id: 9 });
    expect(await loadedIds()).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
  }, 120_000);

  it('PUT sets and resets the state as new versions; runs start from it', async () => {
    const set = await put('/tap/state', { name: 'cursor' }, { state: { last_id: 50 } }).expect(200);
    expect(set.body).toMatchObject({
      name: 'cursor',
      state: { last_id: 50 },
      pipelineToken: null,
      version: 5,
    });
    await runToEnd();
    expect((await state()).state).toEqual({ last_id: 53 });
    expect((await loadedIds()).slice(-3)).toEqual([51, 52, 53]);

    const reset = await put('/tap/state', { name: 'cursor' }, { state: null }).expect(200);
    expect(reset.body).toMatchObject({ state: null, version: 7 });
    expect(await state()).toMatchObject({ state: null, version: 7 });
    await runToEnd();
    expect((await state()).state).toEqual({ last_id: 3 });

    for (const body of [
      {},
      { state: [1, 2] },
      { state: 'x' },
      { state: { big: 'x'.repeat(70_000) } },
      { state: { nul: 'a\u0000b' } },
    ]) {
      const res = await put('/tap/state', { name: 'cursor' }, body).expect(400);
      expect(res.body.message).toMatch(/state/);
    }
    await put('/tap/state', { name: 'no_such_tap' }, { state: null }).expect(404);
  }, 120_000);

  it('a test run reads the state and keeps nothing', async () => {
    const before = await state();
    const res = await post('/tap/run', { name: 'cursor', mode: 'test' }).expect(200);
    expect(res.body.records).toEqual([{ id: 4 }, { id: 5 }, { id: 6 }]);
    expect(res.body.logs).toContain('[tapyard] state after this test (not kept): {"last_id":6}');
    expect(await state()).toEqual(before);
  }, 60_000);

  it('needs tap:read to read the state and tap:update to set it (403 otherwise)', async () => {
    const reader = await issueKey(api.http, admin, 'state-reader', { capabilities: ['tap:read'] });
    const outsider = await issueKey(api.http, admin, 'state-outsider', { capabilities: ['pipeline:read'] });
    await get('/tap/state', { name: 'cursor' }, reader).expect(200);
    await get('/tap/state/history', { name: 'cursor' }, reader).expect(200);
    await get('/tap/state', { name: 'cursor' }, outsider).expect(403);
    const refused = await put('/tap/state', { name: 'cursor' }, { state: null }, reader).expect(403);
    expect(refused.body.message).toMatch(/lacks the capability tap:update/);
    expect((await state()).state).toEqual({ last_id: 3 });
  });

  it("settles each version from its jobs' final status, whoever wrote it; a partial load is not a commit", async () => {
    // Job events written as a worker on another host writes them: through the status store, not this API's run.
    const status = api.app.get(StatusService);
    const states = api.app.get(TapStates);
    await post('/tap', { name: 'ledgered', script: CURSOR_SCRIPT }).expect(200);
    const job = (): JobRef => ({
      environment: env,
      pipeline: 'events',
      pipelineToken: randomUUID(),
      publisherToken: null,
      filename: 'tap:ledgered',
    });
    const [a1, a2, b, c, d1, d2] = [job(), job(), job(), job(), job(), job()];
    for (const j of [a1, a2, b, c, d1, d2]) await status.record(j, 'StreamNotifier', 'begin', 'receiving');
    const version = async (n: number, state: Record<string, unknown>, jobs: JobRef[]): Promise<void> => {
      const pipelineTokens = jobs.map((j) => j.pipelineToken);
      expect(
        await states.recordRun(env, 'ledgered', { runId: randomUUID(), base: n - 1, state, pipelineTokens }),
      ).toBe('pending');
    };
    await version(1, { v: 'a' }, [a1, a2]);
    await version(2, { v: 'b' }, [b]);
    await version(3, { v: 'c' }, [c]);
    await version(4, { v: 'd' }, [d1, d2]);
    await status.record(a1, 'JobRunner', 'end', 'success: 3 loaded', 'success');
    // Rejected rows only: a warning that loaded.
    await status.record(b, 'JobRunner', 'end', 'warning: 2 loaded, 1 rejected', 'warning');
    // One destination failed beside one that loaded: a partial load.
    await status.record(c, 'MongoDBLoader', 'error', 'connection refused', 'processing');
    await status.record(
      c,
      'JobRunner',
      'end',
      'warning: 3 loaded into postgres; not loaded into mongodb',
      'warning',
    );
    await status.record(d1, 'JobRunner', 'error', 'nothing was loaded', 'error');
    const history = async (): Promise<Record<number, string>> =>
      Object.fromEntries(
        (
          (await get('/tap/state/history', { name: 'ledgered' }).expect(200)).body as {
            version: number;
            status: string;
          }[]
        ).map((h) => [h.version, h.status]),
      );
    // a2 is still loading: version 1 waits; d1 failed: version 4 is discarded without waiting for d2.
    expect(await history()).toEqual({ 1: 'pending', 2: 'committed', 3: 'discarded', 4: 'discarded' });
    expect((await get('/tap/state', { name: 'ledgered' }).expect(200)).body).toMatchObject({
      state: { v: 'b' },
      version: 2,
      pipelineToken: b.pipelineToken,
    });
    await status.record(a2, 'JobRunner', 'end', 'success: 3 loaded', 'success');
    // A redelivery that loads after the job ended is dropped by the job's finality: the verdict stands.
    await status.record(d1, 'JobRunner', 'end', 'success: late', 'success');
    expect(await history()).toEqual({ 1: 'committed', 2: 'committed', 3: 'discarded', 4: 'discarded' });
    // The current state is the committed version with the highest number, not the last to commit.
    expect((await get('/tap/state', { name: 'ledgered' }).expect(200)).body.state).toEqual({ v: 'b' });
    const [discarded] = (await get('/tap/state/history', { name: 'ledgered' }).expect(200)).body;
    expect(discarded.reason).toContain(`job ${d1.pipelineToken} ended error`);
  });

  it('deleting the tap deletes its state versions', async () => {
    await api.http.delete('/api/v1/tap').query({ name: 'cursor' }).set('x-api-key', admin).expect(200);
    const left = async (tap: string): Promise<number | null> =>
      (await pg.query(`SELECT 1 FROM tapyard.tap_states WHERE environment = $1 AND tap = $2`, [env, tap]))
        .rowCount;
    expect(await left('cursor')).toBe(0);
    // Another tap's versions stay.
    expect(await left('ledgered')).toBe(4);
  });
});
