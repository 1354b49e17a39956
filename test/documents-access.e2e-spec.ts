import { createHash } from 'node:crypto';
import { Server, createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { getQueueToken } from '@nestjs/bullmq';
import { Queue } from 'bullmq';
import { Pool } from 'pg';
import { QueryRunner } from 'typeorm';
import { MIGRATIONS } from '@tapyard/database';
import { DocumentPayload, INLINE_UPLOAD_BYTES, IngestJob, IngestQueueData, QUEUES } from '@tapyard/queue';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { zip } from './support/archives';
import { droppedJob } from './support/queue-jobs';
import { issueKey, newBootstrapKey } from './support/auth';
import { TEST_DATABASE_URL, TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';

import { vectorPeerFields } from './support/vector-peers';

/**
 * Documents with API keys on, against the embedded pgvector store: container-scoped capabilities,
 * zipped sets through FileNotifier (a small entry carried in its job, a larger one staged), and a model
 * change refused at search time.
 */
describe('documents: capabilities, archives, embedding model changes (pgvector)', () => {
  const env = uniqueEnvironment('docs-access');
  const admin = newBootstrapKey();
  let api: TestApi;
  let worker: TestWorker;
  let pg: Pool;
  const keys: Record<string, string> = {};

  beforeAll(async () => {
    const flags = {
      TAPYARD_ENV: env,
      ...TEST_OBJECT_STORE,
      USE_API_KEYS: 'true',
      TAPYARD_BOOTSTRAP_API_KEY: admin,
      PGVECTOR_URL: vectorPeerFields('pgvector').connectionString,
      // Successive runs of one tap here are about who may run it, not the debounce.
      TAP_DEBOUNCE_MS: '0',
    };
    api = await startApi(flags);
    worker = await startWorker(flags);
    pg = new Pool({ connectionString: TEST_DATABASE_URL, max: 1 });
    for (const name of ['handbook', 'finance']) {
      await api.http
        .post('/api/v1/pipeline')
        .set('x-api-key', admin)
        .send({
          name,
          source: {
            fileAttributes: { unstructuredAttributes: { chunking: { size: 128 } } },
            schemaProperties: { fields: [] },
          },
          destination: { vectorStore: { store: 'pgvector', collection: `${name}_${env.slice(-8)}` } },
        })
        .expect(200);
    }
    const handbook = `handbook_${env.slice(-8)}`;
    keys.reader = await issueKey(api.http, admin, 'reader', {
      capabilities: [`search:vector:collection=${handbook}`],
    });
    keys.uploader = await issueKey(api.http, admin, 'uploader', {
      capabilities: ['pipeline:upload', 'pipeline:read'],
    });
    keys.docs = await issueKey(api.http, admin, 'docs', {
      capabilities: ['pipeline:upload', 'pipeline:read', `document:upload:collection=${handbook}`],
    });
  }, 120_000);

  afterAll(async () => {
    await api?.http
      .delete('/api/v1/pipeline')
      .set('x-api-key', admin)
      .query({ pipeline: 'handbook', deleteData: 'true' });
    await api?.http
      .delete('/api/v1/pipeline')
      .set('x-api-key', admin)
      .query({ pipeline: 'finance', deleteData: 'true' });
    await pg?.query(`DELETE FROM tapyard.taps WHERE environment = $1`, [env]);
    await pg?.end();
    await api?.http
      .delete('/api/v1/pipeline')
      .set('x-api-key', admin)
      .query({ pipeline: 'leave', deleteData: 'true' });
    await worker?.close();
    await api?.close();
  });

  /** Polls a token's rollup as the admin until every job is done. */
  const rollup = async (query: Record<string, string>, atLeast = 1) => {
    for (let i = 0; i < 1200; i++) {
      const res = await api.http
        .get('/api/v1/pipeline/status')
        .set('x-api-key', admin)
        .query({ ...query, withrollup: 'true' });
      const r = res.body?.rollup as
        { allDone: boolean; status: string; jobs: { filename: string; status: string }[] } | undefined;
      if (res.status === 200 && r?.allDone && r.jobs.length >= atLeast) return r;
      await new Promise((ok) => setTimeout(ok, 100));
    }
    throw new Error(`not done: ${JSON.stringify(query)}`);
  };
  const upload = (key: string, pipeline: string, body: Buffer | string, filename: string) =>
    api.http
      .post('/api/v1/pipeline/upload')
      .set('x-api-key', key)
      .field('pipeline', pipeline)
      .attach('file', Buffer.from(body), filename);

  it('needs document:upload on the collection to upload a document', async () => {
    const denied = await upload(keys.uploader, 'handbook', 'Some text.', 'a.txt').expect(403);
    expect(denied.body.message).toMatch(/document:upload/);
    await upload(keys.docs, 'finance', 'Some text.', 'a.txt').expect(403);
    const token = (
      await upload(
        keys.docs,
        'handbook',
        '# Holidays\n\nThe office closes between Christmas and New Year.',
        'holidays.md',
      ).expect(200)
    ).text;
    expect((await rollup({ pipelinetoken: token })).status).toBe('success');
  });

  it('takes a zipped set through FileNotifier: one job per document under one publisher token', async () => {
    const archive = zip([
      {
        name: 'policies/remote.md',
        data: '# Remote work\n\nEmployees may work from home up to three days a week.',
      },
      {
        name: 'policies/travel.pdf',
        data: await readFile(join(__dirname, 'corpora', 'documents', 'travel-policy.pdf')),
      },
      { name: 'policies/image.png', data: Buffer.from([0x89, 0x50, 0x4e, 0x47]) },
    ]);
    const res = await upload(keys.docs, 'handbook', archive, 'policies.zip').field(
      'publishertoken',
      'docs-zip-1',
    );
    expect(res.status).toBe(200);
    const done = await rollup({ publishertoken: 'docs-zip-1' }, 3);
    const jobs = done.jobs.filter((j) => j.filename !== 'policies.zip');
    expect(jobs.map((j) => j.filename).sort()).toEqual(['policies/remote.md', 'policies/travel.pdf']);
    for (const j of jobs) expect(j.status).toBe('success');
  });

  it('carries an entry (or an upload) of at most INLINE_UPLOAD_BYTES in its job and stages a larger one, all embedded', async () => {
    const small = '# Budget\n\nThe travel budget is agreed every spring by the finance committee.';
    const big = `# Ledger\n\n${'The quarterly ledger lists every account and its closing balance. '.repeat(600)}`;
    expect(Buffer.byteLength(big)).toBeGreaterThan(INLINE_UPLOAD_BYTES);
    const archive = zip([
      { name: 'small.md', data: small },
      { name: 'big.md', data: big },
    ]);
    const res = await upload(admin, 'finance', archive, 'ledger.zip').field('publishertoken', 'docs-zip-2');
    expect(res.status).toBe(200);
    const done = await rollup({ publishertoken: 'docs-zip-2' }, 3);
    const jobs = done.jobs.filter((j) => j.filename !== 'ledger.zip') as {
      filename: string;
      status: string;
      pipelineToken: string;
    }[];
    expect(jobs.map((j) => [j.filename, j.status]).sort()).toEqual([
      ['big.md', 'success'],
      ['small.md', 'success'],
    ]);
    const queue = api.app.get<Queue<IngestQueueData>>(getQueueToken(QUEUES.ingest));
    const tokenOf = (filename: string) => jobs.find((j) => j.filename === filename)!.pipelineToken;
    expect((await queue.getJob(`${env}.${tokenOf('small.md')}`))?.name).toBe(IngestJob.document);
    // The small entry was carried in its job; once the job finished, its bytes left Redis (their size stays).
    const carried = (await droppedJob(queue, `${env}.${tokenOf('small.md')}`)) as Partial<DocumentPayload>;
    expect(carried).toMatchObject({ inlineDropped: Buffer.byteLength(small) });
    expect(carried.inline).toBeUndefined();
    expect(carried.staged).toBeUndefined();
    expect(JSON.stringify(carried)).not.toContain(Buffer.from(small).toString('base64').slice(0, 40));
    const staged = (await queue.getJob(`${env}.${tokenOf('big.md')}`))!.data as DocumentPayload;
    expect(staged.staged).toBe(tokenOf('big.md'));
    expect(staged.inline).toBeUndefined();
    expect(staged.inlineDropped).toBeUndefined();
    // A small document uploaded alone travels the same way.
    const note = '# Petty cash\n\nPetty cash is counted every Friday afternoon.';
    const token = (await upload(admin, 'finance', note, 'cash.md').expect(200)).text;
    expect((await rollup({ pipelinetoken: token })).status).toBe('success');
    expect((await queue.getJob(`${env}.${token}`))?.name).toBe(IngestJob.document);
    const alone = (await droppedJob(queue, `${env}.${token}`)) as Partial<DocumentPayload>;
    expect(alone).toMatchObject({ inlineDropped: Buffer.byteLength(note) });
    expect(alone.inline).toBeUndefined();
    expect(alone.staged).toBeUndefined();
    for (const [query, uri] of [
      ['who agrees the travel budget', 'upload://ledger.zip#small.md'],
      ['closing balance of every account', 'upload://ledger.zip#big.md'],
      ['when is petty cash counted', 'upload://cash.md'],
    ]) {
      const hits = await api.http
        .post('/api/v1/search/pgvector')
        .set('x-api-key', admin)
        .send({ query, table: `finance_${env.slice(-8)}` })
        .expect(200);
      expect(hits.body.results[0].metadata.uri).toBe(uri);
    }
  });

  describe('a document tap feeds only a collection its saver and its runner may upload documents to', () => {
    const script =
      'import base64\n' +
      'def fetch(state=None):\n' +
      "    yield {'uri': 'x://leave', 'filename': 'leave.txt', 'content': base64.b64encode(b'Staff get 25 days leave').decode()}\n";
    const tapCaps = ['tap:read', 'tap:update', 'tap:run', 'pipeline:read', 'pipeline:upload'];
    const collection = (c: string) => `leave_${c}_${env.slice(-8)}`;
    const leavePipeline = (c: string) => ({
      name: 'leave',
      source: { fileAttributes: { unstructuredAttributes: {} }, schemaProperties: { fields: [] } },
      destination: { vectorStore: { store: 'pgvector', collection: collection(c) } },
    });
    const as = (key: string) => ({
      post: (path: string, body: object) => api.http.post(`/api/v1${path}`).set('x-api-key', key).send(body),
      get: (path: string, query: Record<string, string>) =>
        api.http.get(`/api/v1${path}`).set('x-api-key', key).query(query),
    });
    const runFor = (runs: { trigger: string; status: string }[]) =>
      runs.find((r) => r.trigger === 'schedule' && r.status !== 'running');

    it('on save and run: document:upload on the collection, as an upload there needs', async () => {
      await as(admin).post('/pipeline', leavePipeline('a')).expect(200);
      keys.tapper = await issueKey(api.http, admin, 'tapper', { capabilities: tapCaps });
      keys.leaveTapper = await issueKey(api.http, admin, 'leave-tapper', {
        capabilities: [...tapCaps, `document:upload:collection=${collection('a')}`],
      });
      const tap = (name: string, targetPipeline: string) => ({
        name,
        tapType: 'document',
        targetPipeline,
        script,
        cronExpression: '* * * * * ?',
        enabled: false,
      });
      const saved = await as(keys.tapper).post('/tap', tap('inject', 'finance')).expect(403);
      expect(saved.body.message).toBe(
        `'tapper' lacks the capability document:upload for collection 'finance_${env.slice(-8)}'`,
      );
      // Another collection's right does not reach this one.
      await as(keys.leaveTapper).post('/tap', tap('inject', 'finance')).expect(403);
      await as(admin).get('/tap', { name: 'inject' }).expect(404);
      await as(keys.leaveTapper).post('/tap', tap('leave_feed', 'leave')).expect(200);

      // A runner without it may not run the tap either; refused before the run history.
      const run = await as(keys.tapper).post('/tap/run', { name: 'leave_feed', mode: 'run' }).expect(403);
      expect(run.body.message).toBe(
        `'tapper' lacks the capability document:upload for collection '${collection('a')}'`,
      );
      expect((await as(admin).get('/tap/runs', { name: 'leave_feed' }).expect(200)).body).toEqual([]);
      const ran = await as(keys.leaveTapper)
        .post('/tap/run', { name: 'leave_feed', mode: 'run' })
        .expect(200);
      expect(ran.body).toMatchObject({ status: 'success', persisted: true });
    });

    it("scheduled and manual runs stay within the tap's grant: the collection its code's last changer could fill", async () => {
      // The pipeline now loads into a collection the tap's author may not fill.
      await as(admin).post('/pipeline', leavePipeline('b')).expect(200);
      const refusal =
        "tap 'leave_feed' may not load into pipeline 'leave': whoever last changed the tap's code (or started " +
        `this run) lacks document:upload for its collection '${collection('b')}'`;
      // Even an admin's run acts within the grant.
      const manual = await as(admin).post('/tap/run', { name: 'leave_feed', mode: 'run' }).expect(400);
      expect(manual.body.message).toBe(refusal);
      // Turning the schedule on changes no code: the grant stays the author's.
      await as(admin).post('/tap', { name: 'leave_feed', enabled: true }).expect(200);
      let runs: { trigger: string; status: string; error: string | null }[] = [];
      for (let i = 0; i < 300 && !runFor(runs); i++) {
        await new Promise((r) => setTimeout(r, 100));
        runs = (await as(admin).get('/tap/runs', { name: 'leave_feed' }).expect(200)).body;
      }
      await as(admin).post('/tap', { name: 'leave_feed', enabled: false }).expect(200);
      expect(runFor(runs)).toMatchObject({ status: 'error', error: refusal });
    }, 60_000);

    it('a grant stored before grants carried document:upload feeds what it fed, through the migration', async () => {
      // What a save before this change stored for leave_feed: no document:upload at all.
      const before = ['pipeline:read', 'job:read', 'pipeline:upload'];
      await pg.query(`UPDATE tapyard.taps SET "grant" = $3 WHERE environment = $1 AND name = $2`, [
        env,
        'leave_feed',
        JSON.stringify(before),
      ]);
      // Without the migration such a tap could no longer feed its document pipeline.
      await as(admin).post('/tap/run', { name: 'leave_feed', mode: 'run' }).expect(400);

      // The migration, as it ran at boot, in a transaction rolled back (the table is shared with other
      // environments); its outcome for this tap is then stored.
      const migration = MIGRATIONS.find((m) => m.name === 'TapGrantsDocumentUpload1765344000000');
      expect(migration).toBeDefined();
      const client = await pg.connect();
      const migrated = await (async () => {
        try {
          await client.query('BEGIN');
          await new migration!().up({ query: (sql: string) => client.query(sql) } as unknown as QueryRunner);
          const row = await client.query<{ grant: string[] }>(
            `SELECT "grant" FROM tapyard.taps WHERE environment = $1 AND name = 'leave_feed'`,
            [env],
          );
          return row.rows[0].grant;
        } finally {
          await client.query('ROLLBACK');
          client.release();
        }
      })();
      expect(migrated).toEqual([...before, 'document:upload']);
      await pg.query(`UPDATE tapyard.taps SET "grant" = $3 WHERE environment = $1 AND name = $2`, [
        env,
        'leave_feed',
        JSON.stringify(migrated),
      ]);
      // Its document went in before: forgotten, so the run has it to load again.
      await api.http
        .delete('/api/v1/tap/ledger')
        .set('x-api-key', admin)
        .query({ name: 'leave_feed' })
        .expect(200);
      const ran = await as(admin).post('/tap/run', { name: 'leave_feed', mode: 'run' }).expect(200);
      expect(ran.body).toMatchObject({ status: 'success', persisted: true });
    });
  });

  it('scopes search by container: another collection answers 404, its own 200', async () => {
    const body = { query: 'how many days can I work from home', table: `handbook_${env.slice(-8)}` };
    const hits = await api.http
      .post('/api/v1/search/pgvector')
      .set('x-api-key', keys.reader)
      .send(body)
      .expect(200);
    expect(hits.body.results[0].metadata.uri).toBe('upload://policies.zip#policies/remote.md');
    await api.http
      .post('/api/v1/search/pgvector')
      .set('x-api-key', keys.reader)
      .send({ ...body, table: `finance_${env.slice(-8)}` })
      .expect(404);
    await api.http.post('/api/v1/search/pgvector').set('x-api-key', keys.uploader).send(body).expect(403);
  });

  it('refuses a search embedded by another model than the one that filled the container (400, text/plain)', async () => {
    // An OpenAI-compatible provider on loopback (a double of the paid API; vectors of 384 numbers, so
    // the dimensions match and only the recorded model tells them apart).
    const server: Server = createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => {
        const { input } = JSON.parse(raw) as { input: string[] };
        const data = input.map((t, index) => ({
          object: 'embedding',
          index,
          embedding: Array.from(
            { length: 384 },
            (_, i) => createHash('sha256').update(`${t}${i}`).digest()[0] - 128,
          ),
        }));
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            object: 'list',
            data,
            model: 'other',
            usage: { prompt_tokens: 1, total_tokens: 1 },
          }),
        );
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const other = await startApi({
      TAPYARD_ENV: env,
      USE_API_KEYS: 'true',
      TAPYARD_BOOTSTRAP_API_KEY: admin,
      PGVECTOR_URL: vectorPeerFields('pgvector').connectionString,
      TAP_EGRESS_ALLOW: `127.0.0.1:${port}`,
    });
    try {
      await other.http
        .put('/api/v1/secrets/embedding')
        .set('x-api-key', admin)
        .send({
          provider: 'openai-compatible',
          baseUrl: `http://127.0.0.1:${port}/v1`,
          model: 'other-embedder',
        })
        .expect(200);
      const res = await other.http
        .post('/api/v1/search/pgvector')
        .set('x-api-key', admin)
        .send({ query: 'remote work', table: `handbook_${env.slice(-8)}` })
        .expect(400);
      expect(res.headers['content-type']).toMatch(/^text\/plain/);
      expect(res.text).toMatch(/builtin:all-MiniLM-L6-v2.*openai-compatible:other-embedder/);
    } finally {
      await other.http.delete('/api/v1/secrets/embedding').set('x-api-key', admin);
      await other.close();
      server.close();
    }
  });
});
