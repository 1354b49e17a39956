import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { VECTOR_STORES, VectorStoreName } from '@tapyard/model';
import type { VectorStore } from '@tapyard/vector-stores';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { writeDocxBomb, writePdfBomb } from './support/document-bombs';
import { CORPUS, documentTapScript } from './support/documents';
import { TEST_DATABASE_URL, TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { countingPgRelay } from './support/net';
import { waitForJob, waitForPublisher } from './support/ingest';
import {
  VECTOR_STORE_REGISTRY,
  dropPgvectorTable,
  openVectorStore,
  peerAllowList,
  peerPolicy,
  vectorPeerFields,
} from './support/vector-peers';

/** The stores whose plug-in is registered: each runs the same document flow against its real server. */
const FIXTURES = join(__dirname, 'corpora', 'documents');
const STORES = VECTOR_STORES.filter((s) => VECTOR_STORE_REGISTRY.factory(s)) as VectorStoreName[];

describe.each(STORES)('documents into %s: tap and upload, search, idempotence, deleteData', (store) => {
  const env = uniqueEnvironment(`docs-${store}`);
  const collection = `kb_${env.replace(/[^a-z0-9]/g, '').slice(-8)}`;
  let api: TestApi;
  let worker: TestWorker;
  let direct: VectorStore;
  let container: string;
  /** pgvector: the worker reaches it through this relay, which counts its statements on the container. */
  let relay: Awaited<ReturnType<typeof countingPgRelay>> | null = null;

  const searchBody = (query: string, extra: Record<string, unknown> = {}) => ({
    query,
    ...(store === 'pgvector'
      ? { table: collection }
      : store === 'weaviate'
        ? { className: container }
        : { collection }),
    ...extra,
  });
  const search = async (query: string, extra: Record<string, unknown> = {}) =>
    (await api.http.post(`/api/v1/search/${store}`).send(searchBody(query, extra)).expect(200)).body
      .results as {
      id: string;
      text: string;
      metadata: Record<string, unknown>;
      _score: number;
    }[];

  beforeAll(async () => {
    const fields = vectorPeerFields(store);
    // pgvector is the embedded default (PGVECTOR_URL, no secret); the others are configured by their secret.
    const flags: Record<string, string> = {
      TAPYARD_ENV: env,
      ...TEST_OBJECT_STORE,
      // Successive runs of one tap here are not about the debounce (taps.e2e-spec.ts is).
      TAP_DEBOUNCE_MS: '0',
      ...(store === 'pgvector'
        ? { PGVECTOR_URL: fields.connectionString }
        : { TAP_EGRESS_ALLOW: peerAllowList(fields) }),
    };
    api = await startApi(flags);
    if (store === 'pgvector') {
      const url = new URL(fields.connectionString);
      relay = await countingPgRelay(Number(url.port), collection);
      url.port = String(relay.port);
      worker = await startWorker({ ...flags, PGVECTOR_URL: url.toString() });
    } else {
      worker = await startWorker(flags);
    }
    if (store !== 'pgvector') await api.http.put(`/api/v1/secrets/${store}`).send(fields).expect(200);
    direct = openVectorStore(store, fields, peerPolicy(fields));
    container = direct.containerName(collection);
    await api.http
      .post('/api/v1/pipeline')
      .send({
        name: 'kb',
        source: { fileAttributes: { unstructuredAttributes: {} }, schemaProperties: { fields: [] } },
        destination: { vectorStore: { store, collection } },
      })
      .expect(200);
  }, 20 * 60_000);

  afterAll(async () => {
    await direct?.drop(container).catch(() => undefined);
    await direct?.close();
    await worker?.close();
    await api?.close();
    await relay?.close();
  });

  it('loads a document tap: one job per document under one publisher token, then finds the right one first', async () => {
    await api.http
      .post('/api/v1/tap')
      .send({ name: 'kb', tapType: 'document', targetPipeline: 'kb', script: documentTapScript(CORPUS) })
      .expect(200);
    const run = await api.http.post('/api/v1/tap/run').send({ name: 'kb', mode: 'run' }).expect(200);
    expect(run.body.pipelineTokens).toHaveLength(3);
    const done = await waitForPublisher(api.http, run.body.publisherToken);
    expect(done.rollup.jobs).toHaveLength(3);
    // Each job's last error with its status, so a failure says which document failed and why.
    expect(done.rollup.jobs.map((j) => [j.filename, j.status, j.lastError])).toEqual(
      done.rollup.jobs.map((j) => [j.filename, 'success', null]),
    );
    expect(done.rollup.status).toBe('success');

    const hits = await search('How many vacation days do I get each year?', { topK: 3 });
    expect(hits[0].metadata).toMatchObject({
      uri: 'kb/leave',
      filename: 'leave.md',
      pipeline: 'kb',
      tap: 'kb',
      section: 'leave',
      year: 2026,
    });
    expect(hits[0].text).toMatch(/twenty-five days/);
    expect(hits[0]._score).toBeGreaterThan(hits[hits.length - 1]._score);
    for (const h of hits) {
      expect(h._score).toBeGreaterThanOrEqual(0);
      expect(h._score).toBeLessThanOrEqual(1);
    }
    const security = await search('password length and phishing', { topK: 1 });
    expect(security[0].metadata.uri).toBe('kb/security');
    const listing =
      store === 'pgvector'
        ? await api.http.get('/api/v1/metadata/postgres/tables').query({ vectorOnly: 'true' }).expect(200)
        : await api.http
            .get(`/api/v1/metadata/${store}/${store === 'weaviate' ? 'classes' : 'collections'}`)
            .expect(200);
    expect(listing.body).toContain(store === 'pgvector' ? collection : container);
    const filtered = await search('How many vacation days do I get each year?', {
      filter: { section: 'canteen' },
    });
    expect(filtered.map((h) => h.metadata.uri)).toEqual(['kb/canteen']);
  });

  it("re-runs with one document changed: one job, and that document's old chunks are gone", async () => {
    const before = await direct.chunkIds(container, 'kb/canteen');
    expect(before.length).toBeGreaterThan(0);
    const changed = {
      ...CORPUS,
      'kb/canteen':
        '# Canteen\n\nThe canteen is closed for renovation until March; food trucks park outside at lunch.',
    };
    await api.http
      .post('/api/v1/tap')
      .send({ name: 'kb', script: documentTapScript(changed) })
      .expect(200);
    const run = await api.http.post('/api/v1/tap/run').send({ name: 'kb', mode: 'run' }).expect(200);
    expect(run.body.pipelineTokens).toHaveLength(1);
    const done = await waitForJob(api.http, run.body.pipelineTokens[0]);
    expect(done.rollup.status).toBe('success');
    const after = await direct.chunkIds(container, 'kb/canteen');
    expect(after.some((id) => before.includes(id))).toBe(false);
    const hits = await search('Where can I eat lunch during the renovation?', {
      topK: 5,
      filter: { uri: 'kb/canteen' },
    });
    expect(hits.map((h) => h.text).join(' ')).toMatch(/food trucks/);
    expect(hits.map((h) => h.text).join(' ')).not.toMatch(/soup of the day/);
    // The others were not touched.
    expect((await direct.chunkIds(container, 'kb/leave')).length).toBeGreaterThan(0);
  });

  it('writes nothing when a document is loaded again unchanged', async () => {
    const html =
      '<html><head><title>Parking</title></head><body><h1>Parking</h1><p>Staff park in the underground garage, level minus two.</p></body></html>';
    const first = await uploadDoc(api, html, 'parking.html');
    expect((await waitForJob(api.http, first)).rollup.status).toBe('success');
    const ids = await direct.chunkIds(container, 'upload://parking.html');
    expect(ids.length).toBeGreaterThan(0);
    const again = await uploadDoc(api, html, 'parking.html');
    const second = await waitForJob(api.http, again);
    expect(second.rollup.status).toBe('success');
    expect(second.events.some((e) => /nothing written/.test(e.description))).toBe(true);
    expect((await direct.chunkIds(container, 'upload://parking.html')).sort()).toEqual(ids.sort());
    const hits = await search('where do employees park their cars', { topK: 1 });
    expect(hits[0].metadata.uri).toBe('upload://parking.html');
  });

  it('loads a small document into a container it prepared in three status writes and, in pgvector, three statements', async () => {
    // The first job may prepare the container (its cache of prepared containers is short-lived).
    const warm = await uploadDoc(api, '# Bikes\n\nBicycles go in the rack by the east door.', 'bikes.md');
    expect((await waitForJob(api.http, warm)).rollup.status).toBe('success');
    const before = relay?.count() ?? 0;
    const token = await uploadDoc(api, '# Lockers\n\nLockers are on the second floor.', 'lockers.md');
    const done = await waitForJob(api.http, token);
    expect(done.rollup.status).toBe('success');
    // The worker's events (the upload's own are the API's): those written together share their
    // transaction, one round trip: the begin; parsed and chunked; the end.
    const db = new Client({ connectionString: TEST_DATABASE_URL });
    await db.connect();
    try {
      const writes = await db.query<{ n: string }>(
        `SELECT count(DISTINCT xmin::text) AS n FROM tapyard.status_events
          WHERE environment = $1 AND pipeline_token = $2
            AND process_name IN ('JobRunner', 'DataQuality', 'Transformation', 'VectorStoreLoader')`,
        [env, token],
      );
      expect(Number(writes.rows[0].n)).toBe(3);
    } finally {
      await db.end();
    }
    // The container is known to exist with the model's dimension: whether it still does, the
    // document's chunk ids, the upsert.
    if (relay) expect(relay.count() - before).toBe(3);
  });

  it('loads uploads of a PDF, a DOCX and an HTML file, each found by its own subject; a broken file ends error saying why', async () => {
    const pdf = await uploadDoc(
      api,
      await readFile(join(FIXTURES, 'travel-policy.pdf')),
      'travel-policy.pdf',
    );
    const docx = await uploadDoc(api, await readFile(join(FIXTURES, 'onboarding.docx')), 'onboarding.docx');
    const html = await uploadDoc(
      api,
      '<html><head><title>Fire safety</title></head><body><h1>Fire drills</h1><p>The fire alarm is tested every Monday at nine; leave by the nearest stairs.</p></body></html>',
      'fire.html',
    );
    for (const t of [pdf, docx, html]) expect((await waitForJob(api.http, t)).rollup.status).toBe('success');
    expect(
      (await search('Can I take a train or a plane for a business trip?', { topK: 1 }))[0].metadata,
    ).toMatchObject({
      uri: 'upload://travel-policy.pdf',
      title: 'Travel policy',
    });
    expect((await search('what do new hires get on day one', { topK: 1 }))[0].metadata.uri).toBe(
      'upload://onboarding.docx',
    );
    expect((await search('when is the fire alarm tested', { topK: 1 }))[0].metadata.uri).toBe(
      'upload://fire.html',
    );

    const locked = await waitForJob(
      api.http,
      await uploadDoc(api, await readFile(join(FIXTURES, 'encrypted.pdf')), 'locked.pdf'),
    );
    expect(locked.rollup.status).toBe('error');
    expect(locked.rollup.jobs[0].lastError).toMatchObject({
      processName: 'DataQuality',
      description: expect.stringMatching(/is encrypted/),
    });
    const scan = await waitForJob(
      api.http,
      await uploadDoc(api, await readFile(join(FIXTURES, 'scanned.pdf')), 'scan.pdf'),
    );
    expect(scan.rollup.jobs[0].lastError?.description).toMatch(/no extractable text/);
    const empty = await waitForJob(
      api.http,
      await uploadDoc(api, '<html><body> </body></html>', 'empty.html'),
    );
    expect(empty.rollup.status).toBe('warning');
  });

  it("refuses a search naming an unknown store, and a container outside the store's rules", async () => {
    const unknown = await api.http.post('/api/v1/search/faiss').send(searchBody('x')).expect(400);
    expect(unknown.body.message).toMatch(/qdrant, pgvector, weaviate, milvus, chroma/);
    await api.http
      .post(`/api/v1/search/${store}`)
      .send({ query: 'x' })
      .expect(store === 'weaviate' ? 404 : 400);
    const badFilter = await api.http
      .post(`/api/v1/search/${store}`)
      .send(searchBody('x', { filter: { 'a.b': 1 } }))
      .expect(400);
    expect(badFilter.body.message).toMatch(/filter key 'a.b'/);
  });

  it("drops the container with the pipeline's data (deleteData=true)", async () => {
    expect(await direct.dimension(container)).toBe(384);
    const res = await api.http
      .delete('/api/v1/pipeline')
      .query({ pipeline: 'kb', deleteData: 'true' })
      .expect(200);
    expect(res.body.dropped).toEqual([`${store} container ${container}`]);
    expect(await direct.dimension(container)).toBeNull();
  });
});

describe('decompression bombs uploaded to the worker', () => {
  const env = uniqueEnvironment('docs-bomb');
  const collection = `kb_bomb_${env.slice(-8).replace(/[^a-z0-9]/g, '')}`;
  let api: TestApi;
  let worker: TestWorker;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tapyard-bombs-'));
    const flags = {
      TAPYARD_ENV: env,
      ...TEST_OBJECT_STORE,
      PGVECTOR_URL: vectorPeerFields('pgvector').connectionString,
      DOCUMENT_MAX_DECOMPRESSED_BYTES: '64mb',
    };
    api = await startApi(flags);
    worker = await startWorker(flags);
    await api.http
      .post('/api/v1/pipeline')
      .send({
        name: 'kb',
        source: { fileAttributes: { unstructuredAttributes: {} }, schemaProperties: { fields: [] } },
        destination: {
          vectorStore: {
            store: 'pgvector',
            collection,
          },
        },
      })
      .expect(200);
  }, 10 * 60_000);

  afterAll(async () => {
    await worker?.close();
    await api?.close();
    await dropPgvectorTable(collection).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  it('ends each bomb job error naming the bound (DOCUMENT_MAX_DECOMPRESSED_BYTES), and the worker keeps loading', async () => {
    const MiB = 1024 * 1024;
    await writeDocxBomb(join(dir, 'bomb.docx'), 900 * MiB);
    await writePdfBomb(join(dir, 'bomb.pdf'), 800 * MiB);
    const docx = await waitForJob(
      api.http,
      await uploadDoc(api, await readFile(join(dir, 'bomb.docx')), 'bomb.docx'),
    );
    expect(docx.rollup.status).toBe('error');
    expect(docx.rollup.jobs[0].lastError).toMatchObject({
      processName: 'DataQuality',
      description: `'bomb.docx' is refused: its decompressed size exceeds the limit of 64 MiB (at entry 'word/document.xml')`,
    });
    const pdf = await waitForJob(
      api.http,
      await uploadDoc(api, await readFile(join(dir, 'bomb.pdf')), 'bomb.pdf'),
    );
    expect(pdf.rollup.status).toBe('error');
    expect(pdf.rollup.jobs[0].lastError?.description).toMatch(
      /^'bomb\.pdf' is refused: the decompressed size of the stream at byte \d+ exceeds 200 times its compressed size$/,
    );
    const ok = await uploadDoc(api, await readFile(join(FIXTURES, 'onboarding.docx')), 'onboarding.docx');
    expect((await waitForJob(api.http, ok)).rollup.status).toBe('success');
  });
});

async function uploadDoc(api: TestApi, content: string | Buffer, filename: string): Promise<string> {
  const res = await api.http
    .post('/api/v1/pipeline/upload')
    .field('pipeline', 'kb')
    .attach('file', Buffer.isBuffer(content) ? content : Buffer.from(content), filename)
    .expect(200);
  return res.text;
}
