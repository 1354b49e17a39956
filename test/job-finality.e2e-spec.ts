import { getQueueToken } from '@nestjs/bullmq';
import { Queue } from 'bullmq';
import { Client } from 'pg';
import { IngestJob, IngestPayload, IngestQueueData, IntakePayload, QUEUES } from '@tapyard/queue';
import { JobRef, StatusService } from '@tapyard/status';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_DATABASE_URL, TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { zip } from './support/archives';
import { TestMinio } from './support/minio';
import { RollupAnswer, csvPipeline, upload, waitForJob } from './support/ingest';
import { droppedJob } from './support/queue-jobs';

/**
 * A job's terminal event is final: nothing of the job is written after it, whoever writes (a late stage,
 * a second worker, a redelivery), and a delivery of a finished job neither loads nor reports.
 */
describe('job finality', () => {
  const env = uniqueEnvironment('final');
  const table = `final_${env.replace(/[^a-z0-9]/g, '_')}`;
  let api: TestApi;
  let worker: TestWorker;
  let pg: Client;
  let status: StatusService;

  beforeAll(async () => {
    api = await startApi({ TAPYARD_ENV: env, ...TEST_OBJECT_STORE });
    worker = await startWorker({ TAPYARD_ENV: env, ...TEST_OBJECT_STORE });
    status = api.app.get(StatusService);
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    await api.http
      .post('/api/v1/pipeline')
      .send(
        csvPipeline('fin', table, [
          ['id', 'int'],
          ['v', 'string'],
        ]),
      )
      .expect(200);
  });
  afterAll(async () => {
    await pg.end();
    await worker.close();
    await api.close();
  });

  const rollup = async (token: string): Promise<RollupAnswer> =>
    (
      await api.http
        .get('/api/v1/pipeline/status')
        .query({ pipelinetoken: token, withrollup: 'true' })
        .expect(200)
    ).body as RollupAnswer;
  /** Adds the payload again under a new queue job id, as a redelivery would, and waits until a worker took it. */
  const redeliver = async (name: string, data: IngestQueueData, jobId: string): Promise<void> => {
    const queue = api.app.get<Queue<IngestQueueData>>(getQueueToken(QUEUES.ingest));
    const again = await queue.add(name, data, { jobId });
    for (let i = 0; ; i++) {
      const state = await again.getState();
      if (state === 'completed' || state === 'failed') {
        expect(state).toBe('completed');
        return;
      }
      if (i > 1200) throw new Error(`the redelivery never ran (state ${state})`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const rowCount = async (): Promise<number> =>
    Number((await pg.query(`SELECT count(*) FROM ingest_test."${table}"`)).rows[0].count);
  const ref = (pipelineToken: string): JobRef => ({
    environment: env,
    pipeline: 'fin',
    pipelineToken,
    publisherToken: null,
    filename: 'direct.csv',
  });

  it('a redelivered finished load (same payload, new queue job id) writes no event and no row', async () => {
    const token = await upload(api.http, 'fin', 'id,v\n1,a\n2,b\n', 'once.csv');
    const done = await waitForJob(api.http, token);
    expect(done.rollup.status).toBe('success');
    const rowsBefore = await rowCount();
    expect(rowsBefore).toBe(2);

    const queue = api.app.get<Queue<IngestQueueData>>(getQueueToken(QUEUES.ingest));
    const original = await queue.getJob(`${env}.${token}`);
    expect(original?.name).toBe(IngestJob.load);
    await redeliver(IngestJob.load, original!.data, `${env}.${token}.again`);

    const after = await rollup(token);
    expect(after.events).toEqual(done.events);
    expect(after.rollup.status).toBe('success');
    expect(await rowCount()).toBe(rowsBefore);
  }, 180_000);

  it('a finished small load added again with its file (a first start: no ended check) writes no event and no row', async () => {
    const file = 'id,v\n3,c\n4,d\n';
    const token = await upload(api.http, 'fin', file, 'twice.csv');
    const done = await waitForJob(api.http, token);
    expect(done.rollup.status).toBe('success');
    const rowsBefore = await rowCount();

    const queue = api.app.get<Queue<IngestQueueData>>(getQueueToken(QUEUES.ingest));
    // The finished job's record loses the file it carried (InlineDrops, a moment after the job's status
    // says it ended): put back, as first queued.
    const { inlineDropped, ...data } = (await droppedJob(
      queue,
      `${env}.${token}`,
    )) as unknown as IngestPayload;
    expect(inlineDropped).toBe(file.length);
    const ended = jest.spyOn(worker.app.get(StatusService), 'ended');
    try {
      await redeliver(
        IngestJob.load,
        { ...data, inline: Buffer.from(file).toString('base64') },
        `${env}.${token}.carried`,
      );
      // The job ran past the check it skipped: its load's ledger and the events' guard held.
      expect(ended.mock.calls.filter(([, t]) => t === token)).toEqual([]);
    } finally {
      ended.mockRestore();
    }

    const after = await rollup(token);
    expect(after.events).toEqual(done.events);
    expect(after.rollup.status).toBe('success');
    expect(await rowCount()).toBe(rowsBefore);
  }, 180_000);

  it('a redelivered finished intake (an extracted archive) writes no event and queues no load', async () => {
    const archive = zip([{ name: 'in/a.csv', data: 'id,v\n10,x\n11,y\n' }]);
    await api.http
      .post('/api/v1/pipeline/upload')
      .field('pipeline', 'fin')
      .field('publishertoken', `pub-${env}`)
      .attach('file', archive, 'in.zip')
      .expect(200);
    let done: RollupAnswer;
    for (let i = 0; ; i++) {
      const res = await api.http
        .get('/api/v1/pipeline/status')
        .query({ publishertoken: `pub-${env}`, withrollup: 'true' });
      done = res.body as RollupAnswer;
      if (res.status === 200 && done.rollup.allDone && done.rollup.jobs.length === 2) break;
      if (i > 1200) throw new Error(`the intake never settled: ${JSON.stringify(res.body)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(done.rollup.status).toBe('success');
    const rowsBefore = await rowCount();

    const queue = api.app.get<Queue<IngestQueueData>>(getQueueToken(QUEUES.ingest));
    // Its terminal event is written just before the queue marks it completed: look in either state.
    const intake = (await queue.getJobs(['active', 'completed'])).find(
      (j) => j.name === IngestJob.intake && j.data.publisherToken === `pub-${env}`,
    );
    expect(intake).toBeDefined();
    // The archive is back where the intake read it, as when removing it after extraction failed: a
    // second extraction would queue its files again, as new jobs.
    const { bucket, key } = intake!.data as IntakePayload;
    await new TestMinio().client.putObject(bucket, key, archive);
    await redeliver(IngestJob.intake, intake!.data, `${intake!.id}.again`);

    const after = await api.http
      .get('/api/v1/pipeline/status')
      .query({ publishertoken: `pub-${env}`, withrollup: 'true' })
      .expect(200);
    expect((after.body as RollupAnswer).events).toEqual(done.events);
    expect(await rowCount()).toBe(rowsBefore);
  }, 180_000);

  it('drops an event written after the terminal one, so the job stays ended', async () => {
    const job = ref(`late-${env}`);
    await status.record(job, 'JobRunner', 'begin', 'loading');
    await status.record(job, 'JobRunner', 'end', 'loaded', 'success');
    const ended = await rollup(job.pipelineToken);

    await status.record(job, 'PostgresLoader', 'processing', 'a late stage');
    await status.record(job, 'JobRunner', 'error', 'a second worker failed', 'error');

    const after = await rollup(job.pipelineToken);
    expect(after.events).toEqual(ended.events);
    expect(after.rollup.status).toBe('success');
    expect(after.rollup.allDone).toBe(true);
  });

  it('of concurrent terminal writes exactly one is written', async () => {
    const job = ref(`race-${env}`);
    await status.record(job, 'JobRunner', 'begin', 'loading');
    const outcomes = ['success', 'error', 'warning', 'success', 'error', 'warning'] as const;
    await Promise.all(
      outcomes.map((o, i) =>
        status.record(job, 'JobRunner', o === 'error' ? 'error' : 'end', `writer ${i}`, o),
      ),
    );

    const { events, rollup: r } = await rollup(job.pipelineToken);
    const terminal = events.filter((e) => e.description.startsWith('writer '));
    expect(terminal).toHaveLength(1);
    const winner = Number(terminal[0].description.slice('writer '.length));
    expect(r.jobs[0].status).toBe(outcomes[winner]);
  });

  it('writes any text a job carries as it is: quotes, backslashes, placeholders, SQL, other scripts', async () => {
    const hostile = `it's \\ a $3 'quote' $1; DROP TABLE tapyard.jobs; -- \u00e9\u4e2d\u{1F600} E'\\x00'`;
    const job = { ...ref(`text-${env}`), filename: `o'neil $2 \\.csv`, publisherToken: `pub'$4` };
    await status.record(job, 'JobRunner', 'begin', hostile);
    await status.record(job, 'JobRunner', 'error', hostile, 'error');
    const { events, rollup: r } = await rollup(job.pipelineToken);
    expect(events.map((e) => e.description)).toEqual([hostile, hostile]);
    expect(r.jobs[0]).toMatchObject({
      filename: job.filename,
      status: 'error',
      lastError: expect.anything(),
    });
    expect(JSON.stringify(r.jobs[0].lastError)).toContain('DROP TABLE');
  });
});
