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

  // Six writes made at once: the first two go alone (two writers), the other four wait and go together.
  const sixAtOnce = (refs: JobRef[]) =>
    Promise.allSettled(
      refs.map((ref, i) =>
        status.recordAll(ref, [
          status.event('JobRunner', 'begin', `job ${i}`),
          status.event('JobRunner', 'end', `job ${i} done`, 'success', { loaded: i, rejected: 0 }),
        ]),
      ),
    );

  it("concurrent jobs' writes share one transaction, each job folded on its own", async () => {
    const refs = Array.from({ length: 6 }, job);
    const settled = await sixAtOnce(refs);
    expect(settled.map((r) => r.status)).toEqual(Array(6).fill('fulfilled'));
    const written = await Promise.all(refs.map(events));
    for (const [i, rows] of written.entries()) {
      expect(rows.map((e) => `${e.process_name} ${e.state}`)).toEqual(['JobRunner begin', 'JobRunner end']);
      expect(await summary(refs[i])).toMatchObject({
        status: 'success',
        started_at: rows[0].epoch,
        ended_at: rows[1].epoch,
      });
    }
    const { rows } = await pg.query<{ rows_loaded: string }>(
      `SELECT rows_loaded FROM tapyard.jobs WHERE environment = $1 AND pipeline_token = ANY($2) ORDER BY rows_loaded`,
      [env, refs.map((r) => r.pipelineToken)],
    );
    expect(rows.map((r) => Number(r.rows_loaded))).toEqual([0, 1, 2, 3, 4, 5]);
    // The four that waited were committed together.
    expect(new Set(written.slice(2).map((w) => w[0].xmin)).size).toBe(1);
  });

  it('a job PostgreSQL refuses in a shared write fails alone: its neighbours are written, it is not', async () => {
    const refs = Array.from({ length: 6 }, job);
    // Too long for the pipeline column: PostgreSQL refuses the write holding it.
    refs[3] = { ...refs[3], pipeline: 'x'.repeat(200) };
    // One that ended before: a shared write adds nothing to it either.
    const ended = refs[4];
    await status.record(ended, 'JobRunner', 'end', 'ended before', 'success');
    const settled = await sixAtOnce(refs);
    expect(settled.map((s) => (s.status === 'fulfilled' ? 'ok' : 'failed')).join(' ')).toBe(
      'ok ok ok failed ok ok',
    );
    expect(await events(refs[3])).toEqual([]);
    expect(await summary(refs[3])).toBeUndefined();
    expect((await events(ended)).map((e) => e.state)).toEqual(['end']);
    for (const i of [0, 1, 2, 5]) {
      expect((await events(refs[i])).map((e) => `${e.process_name} ${e.state}`)).toEqual([
        'JobRunner begin',
        'JobRunner end',
      ]);
      expect(await summary(refs[i])).toMatchObject({ status: 'success', last_process: 'JobRunner' });
    }
  });

  it('keeps every text exactly as given: quotes, backslashes, braces, commas, newlines, "NULL", empty', async () => {
    // The events travel as PostgreSQL arrays (tapyard.record_events): these are the characters an array
    // literal treats specially.
    const ref = { ...job(), filename: 'we{ird}, "name"\\.csv', publisherToken: 'NULL' };
    const texts = ['NULL', 'a "quoted" word', 'back\\slash', '{brace,comma}', '', 'line\nbreak', "it's"];
    const run = status.of(ref);
    for (const t of texts.slice(0, -1)) run.add('DataQuality', 'begin', t);
    await run.record('DataQuality', 'error', texts[texts.length - 1]);
    const { rows } = await pg.query<{
      description: string;
      filename: string;
      publisher_token: string | null;
    }>(
      `SELECT description, filename, publisher_token FROM tapyard.status_events
       WHERE environment = $1 AND pipeline_token = $2 ORDER BY id`,
      [ref.environment, ref.pipelineToken],
    );
    expect(rows.map((r) => r.description)).toEqual(texts);
    expect(new Set(rows.map((r) => `${r.filename}|${r.publisher_token}`))).toEqual(
      new Set([`${ref.filename}|NULL`]),
    );
    expect(
      (
        await pg.query(
          `SELECT last_error_description FROM tapyard.jobs WHERE environment = $1 AND pipeline_token = $2`,
          [ref.environment, ref.pipelineToken],
        )
      ).rows[0],
    ).toEqual({ last_error_description: "it's" });
  });

  describe("a small upload's intake entries, written by the API and carried by its job", () => {
    const intake = () => {
      const entries = [
        { ...status.event('StreamNotifier', 'begin', 'receiving b.csv'), once: true as const },
        {
          ...status.event('StreamNotifier', 'end', 'received 9 bytes; queued for processing'),
          once: true as const,
        },
      ];
      return {
        entries,
        carried: entries.map(({ state, description, epoch }) => ({ state, description, epoch })),
      };
    };
    const contract = ['StreamNotifier begin', 'StreamNotifier end', 'JobRunner begin', 'JobRunner end'];

    it('go once and first when the API writes first', async () => {
      const ref = job();
      const { entries, carried } = intake();
      await status.recordAll(ref, entries);
      const run = status.of(ref, carried);
      run.add('JobRunner', 'begin', 'loading');
      await run.record('JobRunner', 'end', 'done', 'success');
      const written = await events(ref);
      expect(written.map((e) => `${e.process_name} ${e.state}`)).toEqual(contract);
      expect(written.slice(0, 2).map((e) => Number(e.epoch))).toEqual(entries.map((e) => e.epoch));
    });

    it('go once and first when the job writes first, even its end: the API adds nothing after', async () => {
      const ref = job();
      const { entries, carried } = intake();
      const run = status.of(ref, carried);
      run.add('JobRunner', 'begin', 'loading');
      await run.record('JobRunner', 'end', 'done', 'success');
      await status.recordAll(ref, entries);
      expect((await events(ref)).map((e) => `${e.process_name} ${e.state}`)).toEqual(contract);
      expect(await summary(ref)).toMatchObject({
        status: 'success',
        started_at: String(entries[0].epoch),
      });
    });

    it('go once when both writes share one statement', async () => {
      const ref = job();
      const { entries, carried } = intake();
      const run = status.of(ref, carried);
      run.add('JobRunner', 'begin', 'loading');
      // Made in the same turn: the batcher sends them together.
      await Promise.all([status.recordAll(ref, entries), run.flush()]);
      const written = await events(ref);
      expect(written.map((e) => `${e.process_name} ${e.state}`)).toEqual(contract.slice(0, 3));
      expect(new Set(written.map((e) => e.xmin)).size).toBe(1);
    });

    it("a job carries only the intake's begin and end: nothing else goes ahead of its own entries", async () => {
      const ref = job();
      const { carried } = intake();
      const run = status.of(ref, [
        ...carried,
        { state: 'error', description: 'not an intake entry', epoch: 1 } as never,
      ]);
      await run.record('JobRunner', 'begin', 'loading');
      expect((await events(ref)).map((e) => `${e.process_name} ${e.state}`)).toEqual(contract.slice(0, 3));
    });

    it('an entry not marked once is written again, as before', async () => {
      const ref = job();
      const e = status.event('StreamNotifier', 'begin', 'receiving b.csv');
      await status.recordAll(ref, [e]);
      await status.recordAll(ref, [e]);
      expect((await events(ref)).map((r) => r.state)).toEqual(['begin', 'begin']);
    });
  });

  it('a flush with nothing kept writes nothing', async () => {
    const ref = job();
    await status.of(ref).flush();
    expect(await events(ref)).toEqual([]);
    expect(await summary(ref)).toBeUndefined();
  });
});
