import { getQueueToken } from '@nestjs/bullmq';
import { Queue } from 'bullmq';
import { Client } from 'pg';
import { IngestJob, IngestQueueData, QUEUES } from '@tapyard/queue';
import { JobRef, StatusService } from '@tapyard/status';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_DATABASE_URL, uniqueEnvironment } from './support/env';
import { RollupAnswer, csvPipeline, upload, waitForJob } from './support/ingest';

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
    api = await startApi({ TAPYARD_ENV: env });
    worker = await startWorker({ TAPYARD_ENV: env });
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
    const again = await queue.add(IngestJob.load, original!.data, { jobId: `${env}.${token}.again` });
    for (let i = 0; ; i++) {
      const state = await again.getState();
      if (state === 'completed' || state === 'failed') {
        expect(state).toBe('completed');
        break;
      }
      if (i > 1200) throw new Error(`the redelivery never ran (state ${state})`);
      await new Promise((r) => setTimeout(r, 100));
    }

    const after = await rollup(token);
    expect(after.events).toEqual(done.events);
    expect(after.rollup.status).toBe('success');
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
});
