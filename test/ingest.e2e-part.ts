import { Client } from 'pg';
import { getQueueToken } from '@nestjs/bullmq';
import { Job, Queue } from 'bullmq';
import { IngestPayload, IngestQueueData, QUEUES } from '@tapyard/queue';
import { StatusRepository, StatusService } from '@tapyard/status';
import { IngestProcessor } from '../apps/worker/src/ingest.processor';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_DATABASE_URL, uniqueEnvironment } from './support/env';
import { csvPipeline, upload, waitForJob } from './support/ingest';
import { droppedJob } from './support/queue-jobs';

/** Upload → worker stages → COPY into Postgres, watched through the status API. */
describe('ingestion into PostgreSQL (real Postgres and Redis)', () => {
  const env = uniqueEnvironment('ingest');
  const schema = 'ingest_test';
  let api: TestApi;
  let worker: TestWorker;
  let pg: Client;

  const table = (name: string) => `${name}_${env.replace(/[^a-z0-9]/g, '_')}`;
  async function pipeline(name: string, fields: [string, string][], extra: Record<string, unknown> = {}) {
    await api.http
      .post('/api/v1/pipeline')
      .send({ ...csvPipeline(name, table(name), fields), ...extra })
      .expect(200);
  }
  /** The loaded columns (the load id each row carries is checked in write-modes.e2e-spec.ts). */
  async function rows(name: string, order = 1): Promise<Record<string, unknown>[]> {
    const loaded = (await pg.query(`SELECT * FROM ${schema}."${table(name)}" ORDER BY ${order}`)).rows;
    return loaded.map(({ _tapyard_load_id: _id, ...row }) => row);
  }

  beforeAll(async () => {
    api = await startApi({ TAPYARD_ENV: env, UPLOAD_LIMIT: '2mb' });
    worker = await startWorker({ TAPYARD_ENV: env, STATUS_PROGRESS_MS: '10' });
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
  });
  afterAll(async () => {
    await pg.end();
    await worker.close();
    await api.close();
  });

  it('loads a CSV stage by stage, with typed columns and a success rollup', async () => {
    await pipeline('sales', [
      ['id', 'int'],
      ['zip', 'string'],
      ['amount', 'double'],
      ['sold_on', 'date'],
      ['sold_at', 'timestamp'],
      ['paid', 'boolean'],
      ['big', 'bigint'],
    ]);
    const csv =
      'id,zip,amount,sold_on,sold_at,paid,big\n' +
      '1,00501,12.5,2026-01-02,2026-01-02T10:00:00Z,true,9007199254740993\n' +
      '2,"02134",-3,2026-02-28,2026-02-28 23:59:59.123+02:00,no,\n' +
      '3,"line\nbreak, and ""quotes""",,,,,\n';
    const token = await upload(api.http, 'sales', csv, 'sales.csv');
    expect(token).toMatch(/^[0-9a-f-]{36}$/);
    const { rollup, events } = await waitForJob(api.http, token);
    expect(rollup).toMatchObject({ allDone: true, status: 'success' });
    expect(rollup.jobs).toEqual([
      {
        pipelineToken: token,
        pipeline: 'sales',
        filename: 'sales.csv',
        status: 'success',
        startedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        lastEventAt: expect.stringMatching(/\.\d{3}Z$/),
        elapsed: expect.stringMatching(/^\d+\.\d{3}s$/),
        lastError: null,
        rowsLoaded: 3,
        rowsRejected: 0,
      },
    ]);
    // Progress entries (STATUS_PROGRESS_MS is 10 ms here) may appear on a slow machine; their own test covers them.
    const steps = events.filter((e) => e.state !== 'processing').map((e) => `${e.processName}:${e.state}`);
    // The job starts while the upload still arrives: the upload's end may come at any point before the job's.
    expect(steps.indexOf('StreamNotifier:end')).toBeGreaterThan(0);
    expect(steps.indexOf('StreamNotifier:end')).toBeLessThan(steps.indexOf('JobRunner:end'));
    // The file travelled in its job (small); once the job finished, its bytes left Redis, its size stays.
    const queue = api.app.get<Queue<IngestQueueData>>(getQueueToken(QUEUES.ingest));
    const kept = (await droppedJob(queue, `${env}.${token}`)) as Partial<IngestPayload>;
    expect(kept).toMatchObject({ pipelineToken: token, inlineDropped: Buffer.byteLength(csv) });
    expect(kept.inline).toBeUndefined();
    expect(steps.filter((s) => s !== 'StreamNotifier:end')).toEqual([
      'StreamNotifier:begin',
      'JobRunner:begin',
      'DataQuality:begin',
      'PostgresLoader:begin',
      'DataQuality:end',
      'PostgresLoader:end',
      'JobRunner:end',
    ]);
    expect(events.every((e) => e.code === e.state)).toBe(true);

    const loaded = await rows('sales');
    expect(loaded).toHaveLength(3);
    expect(loaded[0]).toMatchObject({
      id: 1,
      zip: '00501',
      amount: 12.5,
      paid: true,
      big: '9007199254740993',
    });
    expect(loaded[0].sold_at).toEqual(new Date('2026-01-02T10:00:00Z'));
    expect(loaded[1]).toMatchObject({ id: 2, zip: '02134', amount: -3, paid: false, big: null });
    expect(loaded[2]).toMatchObject({ id: 3, zip: 'line\nbreak, and "quotes"', amount: null, sold_on: null });

    // Progress entries may come in between on a slow machine (STATUS_PROGRESS_MS is 10 ms here).
    const raw = (
      (await api.http.get('/api/v1/pipeline/status').query({ pipelinetoken: token }).expect(200)).body as {
        state: string;
      }[]
    ).filter((e) => e.state !== 'processing');
    expect(raw).toHaveLength(8);
    expect(raw[0]).toEqual({
      id: expect.any(Number),
      dateTime: expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$/),
      pipeline: 'sales',
      processName: 'StreamNotifier',
      publisherToken: null,
      pipelineToken: token,
      filename: 'sales.csv',
      state: 'begin',
      code: 'begin',
      // A small upload is received whole, carried in its job (the streamed path: upload-streaming).
      description: 'receiving sales.csv',
      epoch: expect.any(Number),
    });

    const summaries = (
      await api.http.get('/api/v1/pipeline/status').query({ pipelinename: 'sales' }).expect(200)
    ).body;
    expect(summaries[0]).toEqual({
      createdAtTimestamp: expect.stringMatching(/Z$/),
      createdAt: expect.any(Number),
      updatedAt: expect.any(Number),
      pipeline: 'sales',
      pipelineToken: token,
      process: 'JobRunner',
      startTime: expect.any(String),
      endTime: expect.any(String),
      totalTime: expect.stringMatching(/^\d+\.\d{3}s$/),
      status: 'end',
    });
    expect(
      (await api.http.get('/api/v1/pipeline/status').query({ pipelinename: 'sales', page: 2 }).expect(200))
        .body,
    ).toEqual([]);
  });

  it('keeps rows that fail coercion or a rule in <table>_rejects and ends as warning', async () => {
    await pipeline(
      'checked',
      [
        ['id', 'int'],
        ['country', 'string'],
        ['qty', 'int'],
      ],
      {
        dataQuality: {
          rules: [
            { type: 'not_null', column: 'country' },
            { type: 'allowed_values', column: 'country', values: ['DE', 'FR'] },
            { type: 'range', column: 'qty', min: 0, max: 100 },
            { type: 'unique', column: 'id' },
          ],
        },
      },
    );
    const csv = 'id,country,qty\n1,DE,5\n2,XX,5\nthree,FR,1\n4,,1\n5,FR,500\n1,FR,1\n6,FR,1,extra\n7,FR,7\n';
    const token = await upload(api.http, 'checked', csv);
    const { rollup } = await waitForJob(api.http, token);
    expect(rollup.status).toBe('warning');
    expect(rollup.jobs[0].lastError).toBeNull();
    expect((await rows('checked')).map((r) => r.id)).toEqual([1, 7]);
    const rejects = (
      await pg.query(
        `SELECT line, stage, reason, raw FROM ${schema}."${table('checked')}_rejects" WHERE pipeline_token = $1 ORDER BY line`,
        [token],
      )
    ).rows;
    expect(rejects.map((r) => [r.line, r.reason])).toEqual([
      ['3', expect.stringMatching(/country.*not one of the allowed values/)],
      ['4', expect.stringMatching(/'three' is not an int/)],
      ['5', expect.stringMatching(/country.*is null/)],
      ['6', expect.stringMatching(/qty.*above 100/)],
      ['7', expect.stringMatching(/id.*duplicate/)],
      ['8', expect.stringMatching(/4, expected 3|fields/)],
    ]);
  });

  it('adds file columns missing from the schema as string, altering the table, and warns', async () => {
    await pipeline('evolving', [['id', 'int']]);
    await waitForJob(api.http, await upload(api.http, 'evolving', 'id\n1\n'));
    const token = await upload(api.http, 'evolving', 'id,Note %,id\n2,hello,3\n');
    expect((await waitForJob(api.http, token)).rollup.status).toBe('warning');
    const def = (await api.http.get('/api/v1/pipeline').query({ pipeline: 'evolving' }).expect(200)).body;
    expect(def.source.schemaProperties.fields).toEqual([
      { name: 'id', type: 'int' },
      { name: 'note_percent', type: 'string' },
      { name: 'id_2', type: 'string' },
    ]);
    expect(def.version).toBe(2);
    expect(await rows('evolving')).toEqual([
      { id: 1, note_percent: null, id_2: null },
      { id: 2, note_percent: 'hello', id_2: '3' },
    ]);
  });

  it('applies declarative transformations and reports the Transformation stage', async () => {
    await pipeline(
      'shaped',
      [
        ['first', 'string'],
        ['last', 'string'],
        ['qty', 'int'],
        ['secret', 'string'],
      ],
      {
        transformation: {
          mappings: [
            { op: 'derive', column: 'full_name', type: 'string', expression: "upper(last) || ', ' || first" },
            { op: 'derive', column: 'double_qty', type: 'int', expression: 'qty * 2' },
            { op: 'drop', column: 'secret' },
            { op: 'rename', from: 'qty', to: 'quantity' },
          ],
        },
      },
    );
    const token = await upload(
      api.http,
      'shaped',
      'first,last,qty,secret\nAda,Lovelace,2,x\nAlan,Turing,,y\n',
    );
    const { rollup, events } = await waitForJob(api.http, token);
    expect(rollup.status).toBe('success');
    expect(events.filter((e) => e.processName === 'Transformation').map((e) => e.state)).toEqual([
      'begin',
      'end',
    ]);
    expect(await rows('shaped')).toEqual([
      { first: 'Ada', last: 'Lovelace', quantity: 2, full_name: 'LOVELACE, Ada', double_qty: 4 },
      { first: 'Alan', last: 'Turing', quantity: null, full_name: 'TURING, Alan', double_qty: null },
    ]);
  });

  it('groups jobs by publisher token, with precedence over pipelinetoken', async () => {
    await pipeline('grouped', [['id', 'int']]);
    const a = await upload(api.http, 'grouped', 'id\n1\n', 'a.csv', `pub-${env}`);
    const b = await upload(api.http, 'grouped', 'id\nx\n2\n', 'b.csv', `pub-${env}`);
    await waitForJob(api.http, a);
    await waitForJob(api.http, b);
    const res = await api.http
      .get('/api/v1/pipeline/status')
      .query({ publishertoken: `pub-${env}`, pipelinetoken: 'ignored', withrollup: 'true' })
      .expect(200);
    expect(res.body.rollup.allDone).toBe(true);
    expect(res.body.rollup.status).toBe('warning');
    expect(res.body.rollup.jobs.map((j: { pipelineToken: string }) => j.pipelineToken).sort()).toEqual(
      [a, b].sort(),
    );
    expect(new Set(res.body.events.map((e: { pipelineToken: string }) => e.pipelineToken))).toEqual(
      new Set([a, b]),
    );
    const ids = res.body.events.map((e: { id: number }) => e.id);
    expect([...ids].sort((x: number, y: number) => x - y)).toEqual(ids);
  });

  it('loads concurrent uploads into a new table, each once', async () => {
    await pipeline('parallel', [['id', 'int']]);
    const files = [1, 2, 3, 4, 5, 6].map((n) => `id,extra_${n % 2}\n${n}0,x\n${n}1,y\n`);
    const tokens = await Promise.all(files.map((f, i) => upload(api.http, 'parallel', f, `p${i}.csv`)));
    const results = await Promise.all(tokens.map((t) => waitForJob(api.http, t)));
    // A job that found its extra column new to the schema added it, and says so (warning).
    for (const r of results) {
      expect(['success', 'warning']).toContain(r.rollup.status);
      if (r.rollup.status === 'warning') {
        const end = r.events.find((e) => e.processName === 'JobRunner' && e.state === 'end');
        expect(end?.description).toMatch(/new columns added to the schema.*: extra_[01]$/);
      }
    }
    expect(results.filter((r) => r.rollup.status === 'warning').length).toBeGreaterThanOrEqual(2);
    const loaded = await rows('parallel');
    expect(loaded.map((r) => r.id).sort((a, b) => Number(a) - Number(b))).toEqual([
      10, 11, 20, 21, 30, 31, 40, 41, 50, 51, 60, 61,
    ]);
    expect(Object.keys(loaded[0]).sort()).toEqual(['extra_0', 'extra_1', 'id']);
  });

  it('reports progress of a long load as processing entries with the rows and bytes so far', async () => {
    await pipeline('progress', [
      ['id', 'int'],
      ['label', 'string'],
    ]);
    let csv = 'id,label\n';
    for (let i = 0; i < 100_000; i++) csv += `${i},r${i}\n`;
    const { rollup, events } = await waitForJob(api.http, await upload(api.http, 'progress', csv));
    expect(rollup.status).toBe('success');
    expect(rollup.jobs[0]).toMatchObject({ rowsLoaded: 100_000, rowsRejected: 0 });
    const progress = events.filter((e) => e.state === 'processing');
    expect(progress.length).toBeGreaterThan(0);
    // The job starts while the upload arrives: its size is the request's content-length (the file
    // and the multipart framing), so the percentage is of a total a little above the file's bytes.
    const notes = progress.map((e) => {
      expect(e.processName).toBe('PostgresLoader');
      const m = /^(\d+) rows loaded so far; 0 rejected; (\d+) of (\d+) bytes read \((\d+)%\)$/.exec(
        e.description,
      );
      expect(m).not.toBeNull();
      const [rows, read, total, percent] = (m as RegExpExecArray).slice(1).map(Number);
      expect(total).toBeGreaterThan(csv.length);
      expect(total).toBeLessThan(csv.length + 1000);
      expect(read).toBeLessThanOrEqual(csv.length);
      expect(percent).toBe(Math.floor((read * 100) / total));
      return { rows, read };
    });
    const counts = notes.map((n) => n.rows);
    expect([...counts].sort((a, b) => a - b)).toEqual(counts);
    expect(counts[counts.length - 1]).toBeLessThanOrEqual(100_000);
    const reads = notes.map((n) => n.read);
    expect([...reads].sort((a, b) => a - b)).toEqual(reads);
    const order = events.map((e) => `${e.processName}:${e.state}`);
    expect(order.lastIndexOf('PostgresLoader:processing')).toBeLessThan(order.indexOf('PostgresLoader:end'));
  });

  it('answers 404 for unknown tokens and 400 without a query', async () => {
    const unknown = await api.http
      .get('/api/v1/pipeline/status')
      .query({ pipelinetoken: 'nope', withrollup: 'true' })
      .expect(404);
    expect(unknown.body.message).toBe("no job has pipeline token 'nope'");
    await api.http.get('/api/v1/pipeline/status').query({ publishertoken: 'nope' }).expect(404);
    const none = await api.http.get('/api/v1/pipeline/status').expect(400);
    expect(none.body.message).toBe('give one of publishertoken, pipelinetoken or pipelinename');
    await api.http.get('/api/v1/pipeline/status').query({ pipelinename: 'sales', page: '0' }).expect(400);
  });

  it('reports a job with no terminal event for 8 hours as timed_out', async () => {
    const status = worker.app.get(StatusService);
    const job = {
      environment: env,
      pipeline: 'ghost',
      pipelineToken: `ghost-${env}`,
      publisherToken: null,
      filename: 'g.csv',
    };
    await status.record(job, 'StreamNotifier', 'begin', 'receiving g.csv');
    const later = new StatusService(worker.app.get(StatusRepository), {
      now: () => Date.now() + 8 * 3600 * 1000 + 1000,
    });
    const { rollup } = await later.rollupOfJob(env, job.pipelineToken);
    expect(rollup).toMatchObject({ allDone: true, status: 'error' });
    expect(rollup.jobs[0].status).toBe('timed_out');
    expect(rollup.jobs[0].elapsed).toBe('28800.000s');
    const now = await status.rollupOfJob(env, job.pipelineToken);
    expect(now.rollup).toMatchObject({ allDone: false, status: 'processing' });
  });

  it('a job BullMQ abandons (workers kept dying on it) ends as error, not processing', async () => {
    const job = {
      environment: env,
      pipeline: 'ghost',
      pipelineToken: `abandoned-${env}`,
      publisherToken: null,
      filename: 'x.csv',
    };
    await worker.app.get(StatusService).record(job, 'StreamNotifier', 'begin', 'receiving x.csv');
    const failed = { data: { ...job, staged: 'nonexistent' } } as Job<IngestPayload>;
    await worker.app
      .get(IngestProcessor)
      .onFailed(failed, new Error('job stalled more than allowable limit'));
    const { rollup } = await waitForJob(api.http, job.pipelineToken);
    expect(rollup.jobs[0]).toMatchObject({
      status: 'error',
      lastError: {
        processName: 'JobRunner',
        description:
          'the job was abandoned after repeated worker failures: job stalled more than allowable limit',
      },
    });
  });

  it('deletes a pipeline with its data, and all status history', async () => {
    await pipeline('doomed', [['id', 'int']]);
    await waitForJob(api.http, await upload(api.http, 'doomed', 'id\n1\n'));
    const res = await api.http
      .delete('/api/v1/pipeline')
      .query({ pipeline: 'doomed', deleteData: 'true' })
      .expect(200);
    expect(res.body).toEqual({
      status: 'ok',
      pipeline: 'doomed',
      dataDeleted: true,
      dropped: [
        `PostgreSQL table tapyard_test.${schema}.${table('doomed')}`,
        `PostgreSQL table tapyard_test.${schema}.${table('doomed')}_rejects`,
      ],
      skipped: [],
    });
    const exists = await pg.query(`SELECT to_regclass($1) AS t`, [`${schema}.${table('doomed')}`]);
    expect(exists.rows[0].t).toBeNull();

    const del = await api.http.delete('/api/v1/pipeline/status').expect(200);
    expect(del.body.deleted).toBeGreaterThan(10);
    expect(
      (await api.http.get('/api/v1/pipeline/status').query({ pipelinename: 'sales' }).expect(200)).body,
    ).toEqual([]);
  });
});
