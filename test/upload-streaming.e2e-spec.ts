import { ClientRequest, IncomingMessage, request } from 'node:http';
import { AddressInfo } from 'node:net';
import { Client } from 'pg';
import { STAGING_PREFIX } from '@tapyard/intake';
import { ObjectStore } from '@tapyard/objectstore';
import { StatusService } from '@tapyard/status';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_DATABASE_URL, uniqueEnvironment } from './support/env';
import { RollupAnswer, idLabelPipeline, waitForPublisher } from './support/ingest';

/**
 * An upload whose pipeline field comes first starts its job while the file still arrives; an upload
 * refused or broken after that commits nothing, and its job says why.
 */
describe('uploads loaded while they arrive', () => {
  const env = uniqueEnvironment('upstream');
  const table = `upstream_${env.replace(/[^a-z0-9]/g, '_')}`;
  const boundary = '----tapyard-streaming-test';
  let api: TestApi;
  let worker: TestWorker;
  let pg: Client;
  let port: number;

  beforeAll(async () => {
    const flags = { TAPYARD_ENV: env, UPLOAD_LIMIT: '1mb', STATUS_PROGRESS_MS: '10' };
    api = await startApi(flags);
    await api.app.listen(0, '127.0.0.1');
    port = (api.app.getHttpServer().address() as AddressInfo).port;
    worker = await startWorker(flags);
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    await idLabelPipeline(api.http, 'streamed', table);
  });
  afterAll(async () => {
    await pg.end();
    await worker.close();
    await api.close();
  });

  /** A multipart upload written by hand, so a test decides when each part of the file goes out. */
  function openUpload(publisher: string): { req: ClientRequest; answer: Promise<IncomingMessage> } {
    const req = request({
      host: '127.0.0.1',
      port,
      path: '/api/v1/pipeline/upload',
      method: 'POST',
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    });
    const answer = new Promise<IncomingMessage>((resolve, reject) => {
      req.on('response', resolve);
      req.on('error', reject);
    });
    req.write(
      `--${boundary}\r\nContent-Disposition: form-data; name="pipeline"\r\n\r\nstreamed\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="publishertoken"\r\n\r\n${publisher}\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="rows.csv"\r\n` +
        'Content-Type: text/csv\r\n\r\nid,label\n',
    );
    return { req, answer };
  }

  const rows = (from: number, to: number): string => {
    let s = '';
    for (let i = from; i <= to; i++) s += `${i},row ${i}\n`;
    return s;
  };

  /** The publisher token's events; none yet (404) until its job records the first. */
  async function events(publisher: string): Promise<RollupAnswer['events']> {
    const res = await api.http.get('/api/v1/pipeline/status').query({ publishertoken: publisher });
    if (res.status === 404) return [];
    expect(res.status).toBe(200);
    return res.body as RollupAnswer['events'];
  }

  async function until(check: () => Promise<boolean>, what: string): Promise<void> {
    const end = Date.now() + 30_000;
    while (!(await check())) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  const count = async (): Promise<number> =>
    Number((await pg.query(`SELECT count(*) FROM ingest_test."${table}"`)).rows[0].count);

  it('the job starts while the file still arrives, and loads all of it once the upload ends', async () => {
    const publisher = `${env}-whole`;
    const { req, answer } = openUpload(publisher);
    try {
      // More than a batch (5,000 rows): the job reads and starts loading the part that arrived.
      req.write(rows(1, 12_000));
      await until(
        async () => (await events(publisher)).some((e) => e.processName === 'PostgresLoader'),
        'the loader to begin before the upload ends',
      );
      const open = await events(publisher);
      expect(open.some((e) => e.processName === 'StreamNotifier' && e.state === 'end')).toBe(false);
      expect(open.some((e) => e.processName === 'JobRunner' && e.state === 'end')).toBe(false);
    } finally {
      req.end(rows(12_001, 30_000) + `\r\n--${boundary}--\r\n`);
    }
    const res = await answer;
    expect(res.statusCode).toBe(200);
    const { rollup } = await waitForPublisher(api.http, publisher, 60_000);
    expect(rollup.status).toBe('success');
    const loaded = await pg.query(
      `SELECT count(*) AS n, count(DISTINCT id) AS d, min(id) AS lo, max(id) AS hi FROM ingest_test."${table}"`,
    );
    expect(loaded.rows[0]).toEqual({ n: '30000', d: '30000', lo: 1, hi: 30_000 });
  });

  it('an upload refused after its job started (over UPLOAD_LIMIT) commits nothing, and the job says why', async () => {
    const before = await count();
    const publisher = `${env}-large`;
    const { req, answer } = openUpload(publisher);
    req.end(rows(100_000, 200_000) + `\r\n--${boundary}--\r\n`);
    expect((await answer).statusCode).toBe(413);
    const { rollup } = await waitForPublisher(api.http, publisher, 60_000);
    expect(rollup.status).toBe('error');
    expect(rollup.jobs[0].lastError?.description).toMatch(
      /the upload was refused \(the file is larger than the upload limit .*\): nothing was loaded/,
    );
    expect(await count()).toBe(before);
  });

  it('a publisher token sent after the file is refused (the job took the fields before it), nothing loaded', async () => {
    const before = await count();
    const req = request({
      host: '127.0.0.1',
      port,
      path: '/api/v1/pipeline/upload',
      method: 'POST',
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    });
    const answer = new Promise<IncomingMessage>((resolve, reject) => {
      req.on('response', resolve);
      req.on('error', reject);
    });
    req.end(
      `--${boundary}\r\nContent-Disposition: form-data; name="pipeline"\r\n\r\nstreamed\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="late.csv"\r\n\r\n` +
        `id,label\n${rows(300_000, 300_010)}\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="publishertoken"\r\n\r\n${env}-late\r\n` +
        `--${boundary}--\r\n`,
    );
    const res = await answer;
    let body = '';
    for await (const chunk of res) body += String(chunk);
    expect(res.statusCode).toBe(400);
    expect(body).toMatch(/publishertoken' must come before 'file'/);
    await new Promise((r) => setTimeout(r, 1500));
    expect(await count()).toBe(before);
  });

  it('a client that goes away mid-upload leaves nothing loaded, and the job ends at once', async () => {
    const before = await count();
    const publisher = `${env}-gone`;
    const { req, answer } = openUpload(publisher);
    answer.catch(() => undefined);
    try {
      req.write(rows(200_000, 212_000));
      await until(
        async () => (await events(publisher)).some((e) => e.processName === 'PostgresLoader'),
        'the job to start loading',
      );
    } finally {
      req.destroy();
    }
    const { rollup } = await waitForPublisher(api.http, publisher, 30_000);
    expect(rollup.status).toBe('error');
    expect(rollup.jobs[0].lastError?.description).toMatch(/the upload was refused .*nothing was loaded/);
    expect(await count()).toBe(before);
  });

  /**
   * One upload whose API-side status writes go through `intake` (the first of them is the begin's);
   * its events once the job ended, as `process state: description`.
   */
  async function uploadWith(
    publisher: string,
    intake: (first: boolean) => Promise<void>,
    whileOpen: () => Promise<void>,
  ): Promise<string[]> {
    const apiStatus = api.app.get(StatusService);
    const write = apiStatus.recordAll.bind(apiStatus);
    let calls = 0;
    const spy = jest.spyOn(apiStatus, 'recordAll').mockImplementation(async (job, list) => {
      if (job.publisherToken === publisher) await intake(calls++ === 0);
      return write(job, list);
    });
    try {
      const { req, answer } = openUpload(publisher);
      try {
        req.write(rows(400_001, 405_000));
        await whileOpen();
      } finally {
        req.end(rows(405_001, 405_100) + `\r\n--${boundary}--\r\n`);
      }
      expect((await answer).statusCode).toBe(200);
      const done = await waitForPublisher(api.http, publisher, 60_000);
      expect(done.rollup.status).toBe('success');
      return done.events.map((e) => `${e.processName} ${e.state}: ${e.description}`);
    } finally {
      spy.mockRestore();
    }
  }

  const BEGIN = 'StreamNotifier begin: receiving rows.csv; loading while it arrives';
  const END = /^StreamNotifier end: received \d+ bytes; loaded while it arrived$/;

  it('queues the job while its begin is written: with that write held, the job starts and writes it first', async () => {
    const publisher = `${env}-held`;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const seen = await uploadWith(
      publisher,
      async (first) => {
        if (first) await held;
      },
      async () => {
        try {
          // Before, the job was queued only once the begin was written: this waited for ever.
          await until(
            async () => (await events(publisher)).some((e) => e.processName === 'JobRunner'),
            'the job to begin while the API writes its intake entry',
          );
        } finally {
          release();
        }
      },
    );
    // The API's write came second and added nothing: one begin, first, and the contract's order.
    expect(seen[0]).toBe(BEGIN);
    expect(seen.filter((e) => e.startsWith('StreamNotifier begin'))).toHaveLength(1);
    expect(seen.filter((e) => END.test(e))).toHaveLength(1);
    expect(seen.at(-1)).toMatch(/^JobRunner end/);
  });

  it("stands on its job when the begin's own write fails: the begin is written once, first, and the file streamed", async () => {
    const publisher = `${env}-unwritten`;
    const seen = await uploadWith(
      publisher,
      async (first) => {
        if (first) throw new Error('connection terminated');
      },
      () =>
        until(
          async () => (await events(publisher)).some((e) => e.processName === 'JobRunner'),
          'the job to begin',
        ),
    );
    expect(seen[0]).toBe(BEGIN);
    expect(seen.filter((e) => e.startsWith('StreamNotifier begin'))).toHaveLength(1);
    expect(seen.filter((e) => END.test(e))).toHaveLength(1);
  });

  it('nothing staged is left once the jobs ended (loaded, refused, cut off)', async () => {
    const store = worker.app.get(ObjectStore);
    const bucket = await store.bucket(env, 'staged');
    // The job of the late publisher token ends on its own (abort), after its answer: wait for it.
    await until(
      async () => (await store.list(bucket, STAGING_PREFIX)).length === 0,
      'the staged inputs to go',
    );
    expect(await store.list(bucket, STAGING_PREFIX)).toEqual([]);
  });
});
