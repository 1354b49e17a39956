import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { TestMinio } from './support/minio';

/** A document tap reading "pages" from a JSON file the test rewrites between runs. */
function docsScript(pages: Record<string, string>): string {
  const items = Object.entries(pages).map(([uri, text]) => ({
    uri,
    filename: `${uri.split('/').pop()}.txt`,
    content: Buffer.from(text).toString('base64'),
  }));
  return `
import json
PAGES = json.loads(${JSON.stringify(JSON.stringify(items))})
def fetch():
    for p in PAGES:
        yield p
`;
}

describe('document taps: compatibility, staging, ledger (real MinIO)', () => {
  const env = uniqueEnvironment('tapdocs');
  let api: TestApi;
  let worker: TestWorker;
  const minio = new TestMinio();
  const staged = `${env}-staged`;

  const docPipeline = (name: string, extra: Record<string, unknown> = {}) => ({
    name,
    source: {
      fileAttributes: { format: 'unstructured', unstructuredAttributes: { chunking: { size: 200 } } },
      schemaProperties: { fields: [{ name: 'text', type: 'string' }] },
    },
    destination: { vectorStore: { store: 'qdrant', collection: 'handbook' } },
    ...extra,
  });

  beforeAll(async () => {
    // Successive runs of one tap here are not about the debounce (taps.e2e-spec.ts is).
    const flags = { TAPYARD_ENV: env, ...TEST_OBJECT_STORE, TAP_DEBOUNCE_MS: '0' };
    api = await startApi(flags);
    worker = await startWorker(flags);
    await api.http.post('/api/v1/pipeline').send(docPipeline('handbook')).expect(200);
    await api.http
      .post('/api/v1/pipeline')
      .send({
        name: 'tabular',
        source: {
          fileAttributes: { format: 'csv' },
          schemaProperties: { fields: [{ name: 'a', type: 'string' }] },
        },
        destination: { database: { table: 'tabular' } },
      })
      .expect(200);
    const noAttrs = docPipeline('no_attrs');
    (noAttrs.source.fileAttributes as Record<string, unknown>).unstructuredAttributes = null;
    await api.http.post('/api/v1/pipeline').send(noAttrs).expect(200);
  }, 60000);
  afterAll(async () => {
    await worker.close();
    await api.close();
  });

  it('refuses a document tap whose target cannot take documents, naming the violation', async () => {
    const tabular = await api.http
      .post('/api/v1/tap')
      .send({ name: 'wiki', tapType: 'document', targetPipeline: 'tabular' })
      .expect(400);
    expect(tabular.body.message).toMatch(/unstructuredAttributes is null/);
    expect(tabular.body.message).toMatch(/no vector-store destination/);
    const attrs = await api.http
      .post('/api/v1/tap')
      .send({ name: 'wiki', tapType: 'document', targetPipeline: 'no_attrs' })
      .expect(400);
    expect(attrs.body.message).toMatch(/unstructuredAttributes/);
    expect(attrs.body.message).not.toMatch(/vector-store/);
    const missing = await api.http
      .post('/api/v1/tap')
      .send({ name: 'wiki', tapType: 'document', targetPipeline: 'nope' })
      .expect(400);
    expect(missing.body.message).toMatch(/'nope' does not exist/);
    await api.http.get('/api/v1/tap').query({ name: 'wiki' }).expect(404);
  });

  it('tests documents: passed through with content_hash and metadata', async () => {
    const res = await api.http
      .post('/api/v1/tap/test')
      .send({
        name: 'wiki',
        tapType: 'document',
        script: docsScript({ 'wiki/a': 'alpha', 'wiki/b': 'beta' }),
      })
      .expect(200);
    expect(res.body).toMatchObject({ dataType: 'document', columns: null, recordCount: 2, error: null });
    expect(res.body.records[0]).toMatchObject({
      uri: 'wiki/a',
      filename: 'a.txt',
      content: Buffer.from('alpha').toString('base64'),
    });
    expect(res.body.records[0].content_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(res.body.records[0].metadata).toEqual(expect.any(Object));
    const bad = await api.http
      .post('/api/v1/tap/test')
      .send({ name: 'wiki', tapType: 'document', script: 'def fetch():\n    return [{"uri": "x"}]\n' })
      .expect(200);
    expect(bad.body.error).toMatch(/filename/);
  });

  it('stages and queues one job per new or changed document, skipping unchanged ones', async () => {
    await api.http
      .post('/api/v1/tap')
      .send({
        name: 'wiki',
        tapType: 'document',
        targetPipeline: 'handbook',
        script: docsScript({ 'wiki/a': 'alpha', 'wiki/b': 'beta', 'wiki/c': 'gamma' }),
      })
      .expect(200);
    const first = await api.http.post('/api/v1/tap/run').send({ name: 'wiki', mode: 'run' }).expect(200);
    expect(first.body).toMatchObject({
      status: 'success',
      persisted: true,
      recordCount: 3,
      dataType: 'document',
    });
    expect(first.body.pipelineTokens).toHaveLength(3);
    const ledger = await api.http.get('/api/v1/tap/ledger').query({ name: 'wiki' }).expect(200);
    expect(ledger.body.map((e: { uri: string }) => e.uri)).toEqual(['wiki/a', 'wiki/b', 'wiki/c']);
    for (const e of ledger.body as { stagedPath: string; pipelineToken: string; contentHash: string }[]) {
      expect(first.body.pipelineTokens).toContain(e.pipelineToken);
      expect(e.stagedPath.startsWith(`${staged}/`)).toBe(true);
      const body = await minio.read(staged, e.stagedPath.slice(staged.length + 1));
      expect(body.length).toBeGreaterThan(0);
      expect(e.contentHash).toMatch(/^[0-9a-f]{64}$/);
    }
    // One status query by publisher token covers every document job of the run.
    const status = await api.http
      .get('/api/v1/pipeline/status')
      .query({ publishertoken: first.body.publisherToken })
      .expect(200);
    expect(new Set(status.body.map((e: { pipelineToken: string }) => e.pipelineToken))).toEqual(
      new Set(first.body.pipelineTokens),
    );

    await api.http
      .post('/api/v1/tap')
      .send({
        name: 'wiki',
        script: docsScript({ 'wiki/a': 'alpha', 'wiki/b': 'beta v2', 'wiki/c': 'gamma' }),
      })
      .expect(200);
    const second = await api.http.post('/api/v1/tap/run').send({ name: 'wiki', mode: 'run' }).expect(200);
    expect(second.body).toMatchObject({ persisted: true, recordCount: 1 });
    expect(second.body.logs).toMatch(/2 unchanged document/);
    const after = await api.http.get('/api/v1/tap/ledger').query({ name: 'wiki' }).expect(200);
    const b = after.body.find((e: { uri: string }) => e.uri === 'wiki/b');
    expect(b.pipelineToken).toBe(second.body.pipelineTokens[0]);
    // The replaced version's staged object is gone.
    const oldB = ledger.body.find((e: { uri: string }) => e.uri === 'wiki/b');
    await expect(minio.read(staged, oldB.stagedPath.slice(staged.length + 1))).rejects.toThrow();

    const third = await api.http.post('/api/v1/tap/run').send({ name: 'wiki', mode: 'run' }).expect(200);
    expect(third.body).toMatchObject({ persisted: false, persistedReason: 'no_records', recordCount: 0 });
  }, 60000);

  it('forgets one entry or the whole ledger, with the staged objects', async () => {
    const entries = (await api.http.get('/api/v1/tap/ledger').query({ name: 'wiki' }).expect(200)).body;
    const a = entries.find((e: { uri: string }) => e.uri === 'wiki/a');
    const removed = await api.http
      .delete('/api/v1/tap/ledger/entry')
      .query({ name: 'wiki', uri: 'wiki/a' })
      .expect(200);
    expect(removed.body.uri).toBe('wiki/a');
    await expect(minio.read(staged, a.stagedPath.slice(staged.length + 1))).rejects.toThrow();
    await api.http.delete('/api/v1/tap/ledger/entry').query({ name: 'wiki', uri: 'wiki/a' }).expect(404);
    const rerun = await api.http.post('/api/v1/tap/run').send({ name: 'wiki', mode: 'run' }).expect(200);
    expect(rerun.body.recordCount).toBe(1);

    const cleared = await api.http.delete('/api/v1/tap/ledger').query({ name: 'wiki' }).expect(200);
    expect(cleared.body).toEqual({ status: 'ok', deleted: 3 });
    expect(await minio.keys(staged, 'taps/wiki/')).toEqual([]);
    const full = await api.http.post('/api/v1/tap/run').send({ name: 'wiki', mode: 'run' }).expect(200);
    expect(full.body.recordCount).toBe(3);
  }, 60000);

  it('clears the ledger when the target pipeline data is deleted, and on tap delete', async () => {
    expect((await api.http.get('/api/v1/tap/ledger').query({ name: 'wiki' })).body).toHaveLength(3);
    await api.http.delete('/api/v1/pipeline').query({ pipeline: 'handbook', deleteData: 'true' }).expect(200);
    expect((await api.http.get('/api/v1/tap/ledger').query({ name: 'wiki' })).body).toEqual([]);
    expect(await minio.keys(staged, 'taps/wiki/')).toEqual([]);
    // The run-time compatibility check: the target is gone now.
    const refused = await api.http.post('/api/v1/tap/run').send({ name: 'wiki', mode: 'run' }).expect(400);
    expect(refused.body.message).toMatch(/'handbook' does not exist/);

    await api.http.post('/api/v1/pipeline').send(docPipeline('handbook')).expect(200);
    await api.http.post('/api/v1/tap/run').send({ name: 'wiki', mode: 'run' }).expect(200);
    expect((await minio.keys(staged, 'taps/wiki/')).length).toBe(3);
    const res = await api.http.delete('/api/v1/tap').query({ name: 'wiki' }).expect(200);
    expect(res.body).toEqual({ status: 'ok', tap: 'wiki', ledgerEntriesDeleted: 3 });
    expect(await minio.keys(staged, 'taps/wiki/')).toEqual([]);
  }, 60000);
});
