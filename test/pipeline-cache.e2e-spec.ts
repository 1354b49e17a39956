import Redis from 'ioredis';
import { Client } from 'pg';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_DATABASE_URL, uniqueEnvironment } from './support/env';
import { csvPipeline, upload, waitForJob } from './support/ingest';
import { LOCAL_REDIS_URL } from './support/local-peers';

/**
 * The pipeline an upload and its job load for is looked up once per process (PipelineCache), not once
 * per upload and once per job. A change made through the API is heard by every process before it is
 * answered; a process that lost its subscription forgets what it cached. An edit of the table behind
 * the API's back is not heard: that is how these tests see whether a lookup was answered from the cache.
 */
describe('pipeline lookups cached per process', () => {
  const env = uniqueEnvironment('plcache');
  const table = (n: number): string => `plcache_${n}_${env.replace(/[^a-z0-9]/g, '_')}`;
  let api: TestApi;
  let worker: TestWorker;
  let pg: Client;
  let redis: Redis;

  const save = (n: number) =>
    api.http
      .post('/api/v1/pipeline')
      .send(csvPipeline('cached', table(n), [['id', 'int']]))
      .expect(200);
  /** Points the stored pipeline at table n without telling any process. */
  const editBehindTheBack = (n: number) =>
    pg.query(
      `UPDATE tapyard.pipelines SET definition = jsonb_set(definition, '{destination,database,table}', $2)
        WHERE environment = $1 AND name = 'cached'`,
      [env, JSON.stringify(table(n))],
    );
  const loadOne = async (id: number): Promise<void> => {
    const token = await upload(api.http, 'cached', `id\n${id}\n`, 'one.csv');
    expect((await waitForJob(api.http, token)).rollup.status).toBe('success');
  };
  /** The ids loaded into table n, or null when that table was never created. */
  const idsIn = async (n: number): Promise<number[] | null> => {
    const name = `ingest_test."${table(n)}"`;
    const { rows } = await pg.query<{ present: boolean }>('SELECT to_regclass($1) IS NOT NULL AS present', [
      name,
    ]);
    if (!rows[0].present) return null;
    return (await pg.query<{ id: number }>(`SELECT id FROM ${name} ORDER BY id`)).rows.map((r) => r.id);
  };
  /** The ids of this process's subscribed cache connections (the API's and the worker's). */
  const subscriptions = async (): Promise<string[]> => {
    const list = (await redis.client('LIST')) as string;
    return list
      .split('\n')
      .filter((l) => l.includes(` name=tapyard-pipelines-changes-${process.pid} `) && l.includes(' sub=1 '))
      .map((l) => /^id=(\d+)/.exec(l)?.[1] ?? '');
  };
  /** Until both processes are subscribed on connections other than `before`. */
  const subscribed = async (before: string[] = []): Promise<void> => {
    for (let i = 0; i < 400; i++) {
      const now = await subscriptions();
      if (now.length === 2 && now.every((id) => !before.includes(id))) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('the pipeline caches did not subscribe');
  };

  beforeAll(async () => {
    api = await startApi({ TAPYARD_ENV: env });
    worker = await startWorker({ TAPYARD_ENV: env });
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    redis = new Redis(LOCAL_REDIS_URL);
    await subscribed();
    await save(1);
  });
  afterAll(async () => {
    redis.disconnect();
    await pg.end();
    await worker.close();
    await api.close();
  });

  it('answers the next upload and job from the cache: an edit nobody announced is not read', async () => {
    await loadOne(1);
    await editBehindTheBack(2);
    await loadOne(2);
    expect(await idsIn(1)).toEqual([1, 2]);
    expect(await idsIn(2)).toBeNull();
  });

  it('a change through the API is heard by the worker before the change is answered', async () => {
    await save(3);
    await loadOne(3);
    expect(await idsIn(3)).toEqual([3]);
    expect(await idsIn(1)).toEqual([1, 2]);
  });

  it('forgets what it cached when its subscription is lost, then caches again', async () => {
    const before = await subscriptions();
    expect(before).toHaveLength(2);
    for (const id of before) await redis.client('KILL', 'ID', id);
    // Both subscribed again: each dropped its entries when its connection closed.
    await subscribed(before);
    await editBehindTheBack(4);
    await loadOne(4);
    expect(await idsIn(4)).toEqual([4]);
    expect(await idsIn(3)).toEqual([3]);
  });
});
