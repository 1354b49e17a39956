import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { JobRef, StatusService } from '@tapyard/status';
import { TestApi, startApi } from './support/apps';
import { TEST_DATABASE_URL, uniqueEnvironment } from './support/env';

/**
 * A job's events written together (a stage change, a job's begin with its stages') land as they would
 * one by one: in order, each keeping the time it happened, the summary row folded from each, and
 * nothing after a terminal event, in the same write or a later one.
 */
describe('status events written in batches', () => {
  const env = uniqueEnvironment('batches');
  let api: TestApi;
  let status: StatusService;
  let pg: Client;

  beforeAll(async () => {
    api = await startApi({ TAPYARD_ENV: env });
    status = api.app.get(StatusService);
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
  });
  afterAll(async () => {
    await pg.end();
    await api.close();
  });

  const job = (): JobRef => ({
    environment: env,
    pipeline: 'batched',
    pipelineToken: randomUUID(),
    publisherToken: null,
    filename: 'b.csv',
  });
  const events = async (ref: JobRef) =>
    (
      await pg.query<{ process_name: string; state: string; epoch: string; xmin: string }>(
        `SELECT process_name, state, epoch, xmin::text FROM tapyard.status_events
         WHERE environment = $1 AND pipeline_token = $2 ORDER BY id`,
        [ref.environment, ref.pipelineToken],
      )
    ).rows;
  const summary = async (ref: JobRef) =>
    (
      await pg.query<{ status: string; last_process: string; started_at: string; ended_at: string | null }>(
        `SELECT status, last_process, started_at, ended_at FROM tapyard.jobs
         WHERE environment = $1 AND pipeline_token = $2`,
        [ref.environment, ref.pipelineToken],
      )
    ).rows[0];

  it('kept events are written with the next record, in one transaction, in order, at their own times', async () => {
    const ref = job();
    const run = status.of(ref);
    run.add('JobRunner', 'begin', 'loading');
    const keptAt = Date.now();
    // Nothing is written until the next record.
    expect(await events(ref)).toEqual([]);
    await new Promise((r) => setTimeout(r, 20));
    run.add('DataQuality', 'begin', 'checking');
    await run.record('PostgresLoader', 'begin', 'writing');
    const written = await events(ref);
    expect(written.map((e) => `${e.process_name} ${e.state}`)).toEqual([
      'JobRunner begin',
      'DataQuality begin',
      'PostgresLoader begin',
    ]);
    expect(new Set(written.map((e) => e.xmin)).size).toBe(1);
    expect(Number(written[0].epoch)).toBeLessThanOrEqual(keptAt);
    expect(Number(written[1].epoch)).toBeGreaterThan(Number(written[0].epoch));
    expect(await summary(ref)).toMatchObject({
      status: 'processing',
      last_process: 'PostgresLoader',
      started_at: written[0].epoch,
      ended_at: null,
    });
  });

  it('the end of a job closes it within its batch: later events there and after are dropped', async () => {
    const ref = job();
    await status.recordAll(ref, [
      status.event('DataQuality', 'end', 'checked'),
      status.event('JobRunner', 'end', 'done', 'success', { loaded: 3, rejected: 0 }),
      status.event('PostgresLoader', 'processing', 'late'),
    ]);
    const run = status.of(ref);
    run.add('JobRunner', 'begin', 'a redelivery');
    await run.flush();
    expect((await events(ref)).map((e) => `${e.process_name} ${e.state}`)).toEqual([
      'DataQuality end',
      'JobRunner end',
    ]);
    expect(await summary(ref)).toMatchObject({ status: 'success', last_process: 'JobRunner' });
  });

  it('a flush with nothing kept writes nothing', async () => {
    const ref = job();
    await status.of(ref).flush();
    expect(await events(ref)).toEqual([]);
    expect(await summary(ref)).toBeUndefined();
  });
});
