import { Pool } from 'pg';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_DATABASE_URL, TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { until } from './support/wait';

interface Run {
  trigger: string;
  error: string | null;
  startedAt: string;
  status: string;
  publisherToken: string | null;
  persisted: boolean;
}

/** Quartz schedules fired by workers: one run per fire time, misfires, changes without restart. */
describe('tap schedules (two workers, real Postgres)', () => {
  const env = uniqueEnvironment('tapcron');
  let api: TestApi;
  let workers: TestWorker[] = [];
  let pg: Pool;
  const flags = { TAPYARD_ENV: env, ...TEST_OBJECT_STORE, TAP_SCHEDULER_MS: '100', TAP_CONCURRENCY: '4' };

  const runs = async (name: string): Promise<Run[]> =>
    (await api.http.get('/api/v1/tap/runs').query({ name }).expect(200)).body as Run[];
  const nextFireAt = async (name: string): Promise<Date | null> =>
    (
      await pg.query(`SELECT next_fire_at FROM tapyard.taps WHERE environment = $1 AND name = $2`, [
        env,
        name,
      ])
    ).rows[0]?.next_fire_at ?? null;
  const scheduledSince = async (name: string, since: number): Promise<Run[]> =>
    (await runs(name)).filter((r) => r.trigger === 'schedule' && Date.parse(r.startedAt) >= since);
  /**
   * Waits until the workers have fired `n` runs of the every-second 'heartbeat' tap: n scheduler
   * rounds at n distinct seconds went by. What a test then finds not fired was due and passed over:
   * a wait on the workers' work, not on the clock.
   */
  const schedulerRounds = async (n: number): Promise<void> => {
    const since = Date.now();
    await api.http.post('/api/v1/tap').send({ name: 'heartbeat', enabled: true }).expect(200);
    await until(`${n} heartbeat runs`, async () => (await scheduledSince('heartbeat', since)).length >= n);
    await api.http.post('/api/v1/tap').send({ name: 'heartbeat', enabled: false }).expect(200);
  };
  const running = async (name: string): Promise<boolean> =>
    (await runs(name)).some((r) => r.status === 'running');

  beforeAll(async () => {
    api = await startApi(flags);
    pg = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
    await api.http
      .post('/api/v1/pipeline')
      .send({
        name: 'ticks',
        source: {
          fileAttributes: { format: 'csv' },
          schemaProperties: { fields: [{ name: 'n', type: 'int' }] },
        },
        destination: { database: { schema: 'public', table: `ticks_${env.replace(/[^a-z0-9]/g, '_')}` } },
      })
      .expect(200);
    await api.http
      .post('/api/v1/tap')
      .send({
        name: 'heartbeat',
        script: 'def fetch():\n    return []\n',
        cronExpression: '* * * * * ?',
        enabled: false,
      })
      .expect(200);
  }, 60000);
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.close()));
    await pg.query(`DROP TABLE IF EXISTS public."ticks_${env.replace(/[^a-z0-9]/g, '_')}"`);
    await pg.end();
    await api.close();
  });

  it('fires each fire time exactly once with two workers, as trigger schedule with a publisher token', async () => {
    workers = [await startWorker(flags), await startWorker(flags)];
    const createdAt = Date.now();
    await api.http
      .post('/api/v1/tap')
      .send({
        name: 'every2s',
        script: 'def fetch():\n    return [{"n": 1}]\n',
        targetPipeline: 'ticks',
        cronExpression: '0/2 * * * * ?',
        enabled: true,
      })
      .expect(200);
    await until(
      'three scheduled runs of every2s, ended',
      async () => (await scheduledSince('every2s', 0)).filter((r) => r.status !== 'running').length >= 3,
    );
    await api.http.post('/api/v1/tap').send({ name: 'every2s', enabled: false }).expect(200);
    const disabledAt = Date.now();
    expect(await nextFireAt('every2s')).toBeNull();
    // A run claimed just before disabling may still be finishing.
    await until('the last every2s run to end', async () => !(await running('every2s')));
    const fired = await scheduledSince('every2s', 0);
    // At most one run per fire time (each even second) between saving and disabling the tap.
    const fireTimes = Math.floor(disabledAt / 2000) - Math.floor(createdAt / 2000);
    expect(fired.length).toBeGreaterThanOrEqual(3);
    expect(fired.length).toBeLessThanOrEqual(fireTimes);
    const starts = fired.map((r) => Date.parse(r.startedAt)).sort((a, b) => a - b);
    // A fire time run twice would start twice within milliseconds; on time, runs are 2 s apart.
    for (let i = 1; i < starts.length; i++) expect(starts[i] - starts[i - 1]).toBeGreaterThan(500);
    for (const r of fired) {
      expect(r.status).toBe('success');
      expect(r.persisted).toBe(true);
      expect(r.publisherToken).toMatch(/^[0-9a-f-]{36}$/);
    }
    // Disabled: nothing more fires, through rounds spanning an even second.
    const count = (await runs('every2s')).length;
    await schedulerRounds(3);
    expect((await runs('every2s')).length).toBe(count);
  }, 60000);

  it('takes a schedule change without restart', async () => {
    await api.http
      .post('/api/v1/tap')
      .send({
        name: 'changing',
        script: 'def fetch():\n    return []\n',
        cronExpression: '0 0 0 1 1 ? 2099',
        enabled: true,
      })
      .expect(200);
    expect((await nextFireAt('changing'))?.toISOString()).toBe('2099-01-01T00:00:00.000Z');
    await schedulerRounds(2);
    expect(await runs('changing')).toEqual([]);
    await api.http.post('/api/v1/tap').send({ name: 'changing', cronExpression: '* * * * * ?' }).expect(200);
    await until('two runs on the new schedule', async () => (await runs('changing')).length >= 2);
    await api.http.post('/api/v1/tap').send({ name: 'changing', enabled: false }).expect(200);
  }, 30000);

  it('closes the history entry of a run whose process stopped', async () => {
    await pg.query(
      `INSERT INTO tapyard.tap_runs (run_id, environment, tap, mode, trigger, status, started_at)
       VALUES (gen_random_uuid(), $1, 'changing', 'run', 'schedule', 'running', now() - interval '2 hours')`,
      [env],
    );
    const worker = await startWorker({ ...flags, TAP_TIMEOUT_MS: '60000' });
    try {
      await until('the stale run to be closed', async () => !(await running('changing')));
    } finally {
      await worker.close();
    }
    const stale = (await runs('changing')).find((r) => Date.parse(r.startedAt) < Date.now() - 3600_000);
    expect(stale).toMatchObject({
      status: 'error',
      error: expect.stringMatching(/process running this tap stopped/),
    });
  });

  it('after downtime runs one catch-up, not a burst, then resumes the schedule', async () => {
    await Promise.all(workers.map((w) => w.close()));
    workers = [];
    await api.http
      .post('/api/v1/tap')
      .send({
        name: 'minutely',
        script: 'def fetch():\n    return []\n',
        cronExpression: '0 * * * * ?',
        enabled: true,
      })
      .expect(200);
    // Five fire times were missed while no worker ran.
    await pg.query(
      `UPDATE tapyard.taps SET next_fire_at = now() - interval '5 minutes' WHERE environment = $1 AND name = $2`,
      [env, 'minutely'],
    );
    const t0 = Date.now();
    workers = [await startWorker(flags), await startWorker(flags)];
    await until('the catch-up run', async () => (await runs('minutely')).length >= 1);
    // Rounds after it: a burst for the other missed fire times would show by now.
    await schedulerRounds(2);
    const fired = await runs('minutely');
    // One catch-up for the five missed fire times; a minute boundary inside the window may add its own run.
    const boundaries = Math.floor(Date.now() / 60000) - Math.floor(t0 / 60000);
    expect(fired.length).toBeGreaterThanOrEqual(1);
    expect(fired.length).toBeLessThanOrEqual(1 + boundaries);
    expect(fired.every((r) => r.trigger === 'schedule')).toBe(true);
    const starts = fired.map((r) => Date.parse(r.startedAt)).sort((a, b) => a - b);
    // A later run belongs to a later minute (its own fire time), never to the same missed window.
    for (let i = 1; i < starts.length; i++) {
      expect(Math.floor(starts[i] / 60000)).toBeGreaterThan(Math.floor(starts[i - 1] / 60000));
    }
    const next = await nextFireAt('minutely');
    expect(next!.getTime()).toBeGreaterThan(Date.now());
    expect(next!.getUTCSeconds()).toBe(0);
    await api.http.post('/api/v1/tap').send({ name: 'minutely', enabled: false }).expect(200);
  }, 30000);

  it("reads a schedule in the tap's time zone: GET /tap shows the next five fire times with the offset", async () => {
    const saved = await api.http
      .post('/api/v1/tap')
      .send({ name: 'berlin', script: 'def fetch():\n    return []\n', cronExpression: '0 30 7 ? * MON-FRI' })
      .expect(200);
    // Configurations default to UTC; a disabled schedule has no fire times.
    expect(saved.body.timezone).toBe('UTC');
    expect((await api.http.get('/api/v1/tap').query({ name: 'berlin' })).body.nextFireTimes).toEqual([]);
    await api.http
      .post('/api/v1/tap')
      .send({ name: 'berlin', timezone: 'Europe/Berlin', enabled: true })
      .expect(200);
    const got = await api.http.get('/api/v1/tap').query({ name: 'berlin' }).expect(200);
    expect(got.body.timezone).toBe('Europe/Berlin');
    const times: string[] = got.body.nextFireTimes;
    expect(times).toHaveLength(5);
    // Checked with Intl, not with the implementation: 07:30 on a weekday in Berlin, offset as Berlin has it then.
    const berlin = new Intl.DateTimeFormat('en-GB', {
      timeZone: 'Europe/Berlin',
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
      timeZoneName: 'longOffset',
    });
    for (const t of times) {
      expect(t).toMatch(/^\d{4}-\d\d-\d\dT07:30:00\+0[12]:00$/);
      const parts = berlin.formatToParts(new Date(t));
      const part = (type: string): string | undefined => parts.find((p) => p.type === type)?.value;
      expect(['Mon', 'Tue', 'Wed', 'Thu', 'Fri']).toContain(part('weekday'));
      expect(`${part('hour')}:${part('minute')}`).toBe('07:30');
      expect(part('timeZoneName')).toBe(`GMT${t.slice(-6)}`);
    }
    // The schedule's claim is the first of them.
    expect((await nextFireAt('berlin'))?.toISOString()).toBe(new Date(times[0]).toISOString());
    await api.http.post('/api/v1/tap').send({ name: 'berlin', enabled: false }).expect(200);
  });

  it('refuses an unknown time zone with a 400 naming it', async () => {
    const res = await api.http
      .post('/api/v1/tap')
      .send({ name: 'nowhere', cronExpression: '0 0 7 * * ?', timezone: 'Mars/Olympus_Mons' })
      .expect(400);
    expect(res.body.message).toMatch(/timezone 'Mars\/Olympus_Mons' is not a known IANA timezone/);
    expect(res.body.code).toBe('tap.invalid_timezone');
    await api.http.get('/api/v1/tap').query({ name: 'nowhere' }).expect(404);
  });

  it("a worker computes the next fire time in the tap's zone", async () => {
    // Kolkata is UTC+05:30: "every hour on the hour" there is half past in UTC.
    await api.http
      .post('/api/v1/tap')
      .send({
        name: 'kolkata',
        script: 'def fetch():\n    return []\n',
        cronExpression: '0 0 * * * ?',
        timezone: 'Asia/Kolkata',
        enabled: true,
      })
      .expect(200);
    expect((await nextFireAt('kolkata'))?.getUTCMinutes()).toBe(30);
    await pg.query(
      `UPDATE tapyard.taps SET next_fire_at = now() - interval '1 minute' WHERE environment = $1 AND name = $2`,
      [env, 'kolkata'],
    );
    await until('the overdue kolkata run', async () => (await runs('kolkata')).length >= 1);
    const next = await nextFireAt('kolkata');
    expect(next!.getTime()).toBeGreaterThan(Date.now());
    expect(next!.getUTCMinutes()).toBe(30);
    await api.http.post('/api/v1/tap').send({ name: 'kolkata', enabled: false }).expect(200);
  }, 30000);
});
