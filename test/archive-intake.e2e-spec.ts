import { Client } from 'pg';
import { gzipSync } from 'node:zlib';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { tar, zip } from './support/archives';
import { TEST_DATABASE_URL, TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { RollupAnswer, csvPipeline } from './support/ingest';
import { closedPort } from './support/net';
import { TestMinio } from './support/minio';

/** Compressed uploads and files dropped into the raw bucket, through FileNotifier (real MinIO). */
describe('archive intake and raw-bucket drops (FileNotifier)', () => {
  const env = uniqueEnvironment('arch');
  const table = `arch_${env.replace(/[^a-z0-9]/g, '_')}`;
  const flags = { TAPYARD_ENV: env, ...TEST_OBJECT_STORE, RAW_POLL_MS: '200' };
  let api: TestApi;
  let workers: TestWorker[] = [];
  let pg: Client;
  let minio: TestMinio;

  const uploadArchive = async (name: string, data: Buffer, publisher: string) => {
    const res = await api.http
      .post('/api/v1/pipeline/upload')
      .field('pipeline', 'orders')
      .field('publishertoken', publisher)
      .attach('file', data, name)
      .expect(200);
    expect(res.text).toBe('');
  };
  /** Polls the publisher rollup until every job of the intake is done. */
  const settle = async (publisher: string, jobs: number): Promise<RollupAnswer> => {
    const deadline = Date.now() + 120_000;
    for (;;) {
      const res = await api.http
        .get('/api/v1/pipeline/status')
        .query({ publishertoken: publisher, withrollup: 'true' });
      if (res.status === 200) {
        const body = res.body as RollupAnswer;
        if (body.rollup.allDone && (body.rollup.jobs.length >= jobs || body.rollup.status === 'error'))
          return body;
      }
      if (Date.now() > deadline)
        throw new Error(`intake ${publisher} did not settle: ${JSON.stringify(res.body)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const count = async (): Promise<number> =>
    Number(
      (await pg.query(`SELECT count(*) FROM ingest_test."${table}"`).catch(() => ({ rows: [{ count: 0 }] })))
        .rows[0].count,
    );

  beforeAll(async () => {
    api = await startApi(flags);
    workers = [await startWorker(flags), await startWorker(flags)];
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    minio = new TestMinio();
    await api.http
      .post('/api/v1/pipeline')
      .send(
        csvPipeline('orders', table, [
          ['id', 'int'],
          ['item', 'string'],
        ]),
      )
      .expect(200);
  });
  afterAll(async () => {
    await pg.end();
    for (const w of workers) await w.close();
    await api.close();
  });

  it('a zip upload answers 200 with an empty body; each CSV inside becomes its own job under the publisher token', async () => {
    const before = await count();
    await uploadArchive(
      'orders.zip',
      zip([
        { name: 'jan/a.csv', data: 'id,item\n1,pen\n2,ink\n' },
        { name: 'feb/b.csv', data: 'id,item\n3,pad\n' },
        { name: 'readme.md', data: '# notes' },
        // A data set's licence or notes: text, not rows (issue 27 item 7).
        { name: 'LICENSE.txt', data: 'id,item\nCC-BY 4.0, attribution required\n' },
        { name: '__MACOSX/jan/._a.csv', data: 'x' },
      ]),
      'pub-zip',
    );
    const { rollup, events } = await settle('pub-zip', 3);
    const byFile = Object.fromEntries(rollup.jobs.map((j) => [j.filename, j.status]));
    expect(byFile).toEqual({ 'orders.zip': 'warning', 'jan/a.csv': 'success', 'feb/b.csv': 'success' });
    const intake = events.find((e) => e.processName === 'FileNotifier' && /skipped 3/.test(e.description));
    expect(intake?.description).toMatch(/LICENSE\.txt \(unsupported file type\)/);
    expect((await count()) - before).toBe(3);
    // The staged archive is gone from the raw bucket once extracted.
    expect(await minio.keys(`${env}-raw`, '_uploads/')).toEqual([]);
  });

  it('reads .tar.gz, .tar, .jar and .gz uploads', async () => {
    const before = await count();
    await uploadArchive('a.tar.gz', await tar([{ name: 'x.csv', data: 'id,item\n10,a\n' }], true), 'pub-tgz');
    await uploadArchive('b.tar', await tar([{ name: 'y.csv', data: 'id,item\n11,b\n' }]), 'pub-tar');
    await uploadArchive('c.jar', zip([{ name: 'z.csv', data: 'id,item\n12,c\n' }]), 'pub-jar');
    await uploadArchive('d.csv.gz', gzipSync('id,item\n13,d\n'), 'pub-gz');
    for (const p of ['pub-tgz', 'pub-tar', 'pub-jar', 'pub-gz'])
      expect((await settle(p, 2)).rollup.status).toBe('success');
    expect((await count()) - before).toBe(4);
  });

  it('refuses dangerous or broken archives with a clear error, and loads nothing from them', async () => {
    const before = await count();
    const cases: [string, Buffer, RegExp][] = [
      [
        'traversal.tar',
        await tar([
          { name: 'ok.csv', data: 'id,item\n1,a\n' },
          { name: '../evil.csv', data: 'id,item\n2,b\n' },
        ]),
        /escapes|\.\./,
      ],
      ['abs.zip', zip([{ name: '/etc/evil.csv', data: 'id,item\n1,a\n' }]), /absolute|escapes/],
      ['link.tar', await tar([{ name: 'l.csv', symlink: '/etc/passwd' }]), /link/],
      [
        'nested.zip',
        zip([{ name: 'inner.zip', data: zip([{ name: 'a.csv', data: 'id\n1\n' }]) }]),
        /inside archives/,
      ],
      ['bomb.csv.gz', gzipSync(Buffer.alloc(64 * 1024 * 1024)), /expands more than/],
      ['corrupt.zip', Buffer.from('PK\u0003\u0004 this is not a zip file at all'), /corrupt/i],
      ['nothing.zip', zip([{ name: 'photo.png', data: 'png' }]), /holds no file/],
      [
        'many.tar.gz',
        await tar(
          // One past the limit (10,000): 100,000 took some 7 s of CPU to build and 5 s to refuse.
          Array.from({ length: 10_001 }, (_, i) => ({ name: `f${i}.csv`, data: '' })),
          true,
        ),
        /more than 10000 entries/,
      ],
    ];
    for (const [name, data, reason] of cases) {
      await uploadArchive(name, data, `pub-bad-${name}`);
      const { rollup } = await settle(`pub-bad-${name}`, 1);
      expect(rollup.jobs).toHaveLength(1);
      expect(rollup.status).toBe('error');
      expect(rollup.jobs[0].lastError?.processName).toBe('FileNotifier');
      expect(rollup.jobs[0].lastError?.description).toMatch(reason);
    }
    expect(await count()).toBe(before);
    // The service keeps serving.
    await api.http.get('/api/v1/pipelines').expect(200);
    // Eight uploads one after the other, a 64 MB bomb among them: over two minutes on a loaded machine.
  }, 300_000);

  it('a .bz2 upload is 415 naming the formats it reads', async () => {
    const res = await api.http
      .post('/api/v1/pipeline/upload')
      .field('pipeline', 'orders')
      .attach('file', Buffer.from('BZh91AY&SY'), 'x.csv.bz2')
      .expect(415);
    expect(res.body.message).toMatch(/\.zip, \.jar, \.tar, \.tar\.gz, \.tgz or \.gz/);
  });

  it('a file dropped into the raw bucket under <pipeline>/ is loaded exactly once, with two workers polling', async () => {
    const before = await count();
    const key = 'orders/drops/März 2026 ü.csv';
    await minio.client.putObject(`${env}-raw`, key, Buffer.from('id,item\n20,dropped\n21,dropped\n'));
    const deadline = Date.now() + 120_000;
    while ((await count()) - before < 2 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    // Several more poll rounds: nothing is taken twice.
    await new Promise((r) => setTimeout(r, 1500));
    expect((await count()) - before).toBe(2);
    const claims = await pg.query(
      'SELECT count(*) FROM tapyard.raw_objects WHERE environment = $1 AND object_key = $2',
      [env, key],
    );
    expect(Number(claims.rows[0].count)).toBe(1);
    const { rows } = await pg.query(
      'SELECT pipeline_token FROM tapyard.raw_objects WHERE environment = $1 AND object_key = $2',
      [env, key],
    );
    const job = await api.http
      .get('/api/v1/pipeline/status')
      .query({ pipelinetoken: rows[0].pipeline_token, withrollup: 'true' })
      .expect(200);
    expect(job.body.rollup.jobs).toEqual([
      expect.objectContaining({ filename: 'März 2026 ü.csv', status: 'success', pipeline: 'orders' }),
    ]);
  });

  it('a compressed upload without an object store is 503 naming it', async () => {
    const bare = await startApi({ TAPYARD_ENV: env, OBJECT_STORE_ENDPOINT: undefined });
    try {
      const res = await bare.http
        .post('/api/v1/pipeline/upload')
        .field('pipeline', 'orders')
        .attach('file', zip([{ name: 'a.csv', data: 'id\n1\n' }]), 'a.zip')
        .expect(503);
      expect(res.body.message).toMatch(/object store is not configured/);
    } finally {
      await bare.close();
    }
  });
});

describe('archive intake while the object store is down', () => {
  it('the intake job ends error naming the object store; the service keeps serving', async () => {
    const env = uniqueEnvironment('arch-down');
    const api = await startApi({ TAPYARD_ENV: env, ...TEST_OBJECT_STORE });
    // The worker sees a store that refuses connections: as if MinIO went down after the upload.
    const worker = await startWorker({
      TAPYARD_ENV: env,
      ...TEST_OBJECT_STORE,
      OBJECT_STORE_ENDPOINT: `http://127.0.0.1:${await closedPort()}`,
      STAGING_READ_RETRY_SECONDS: '2',
      RAW_POLL_MS: '0',
    });
    try {
      await api.http
        .post('/api/v1/pipeline')
        .send(csvPipeline('orders', `down_${env.replace(/[^a-z0-9]/g, '_')}`, [['id', 'int']]))
        .expect(200);
      await api.http
        .post('/api/v1/pipeline/upload')
        .field('pipeline', 'orders')
        .field('publishertoken', 'pub-down')
        .attach('file', zip([{ name: 'a.csv', data: 'id\n1\n' }]), 'a.zip')
        .expect(200);
      const deadline = Date.now() + 120_000;
      for (;;) {
        const res = await api.http
          .get('/api/v1/pipeline/status')
          .query({ publishertoken: 'pub-down', withrollup: 'true' });
        const rollup = (res.body as RollupAnswer).rollup;
        if (res.status === 200 && rollup.allDone) {
          expect(rollup.status).toBe('error');
          expect(rollup.jobs[0].lastError?.description).toMatch(/object store failed/);
          break;
        }
        if (Date.now() > deadline) throw new Error(`no terminal status: ${JSON.stringify(res.body)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      await api.http.get('/api/v1/version').expect(200);
    } finally {
      await worker.close();
      await api.close();
    }
  });
});
