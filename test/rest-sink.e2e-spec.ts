import { Client } from 'pg';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { issueKey, newBootstrapKey } from './support/auth';
import { TEST_DATABASE_URL, uniqueEnvironment } from './support/env';
import { csvPipeline, upload, waitForJob } from './support/ingest';
import { RestSink } from './support/rest-sink';

/**
 * The REST sink against a real HTTP server on loopback: what it sends (batches, format, method, auth,
 * idempotency keys), how it retries, what becomes of refused batches, and where it may not send.
 */
describe('REST endpoint sink', () => {
  const env = uniqueEnvironment('rest');
  const admin = newBootstrapKey();
  const sink = new RestSink();
  let api: TestApi;
  let worker: TestWorker;
  let pg: Client;
  const csv = (n: number) =>
    `id,name\n${Array.from({ length: n }, (_, i) => `${i + 1},n${i + 1}`).join('\n')}\n`;

  async function pipeline(name: string, rest: Record<string, unknown>): Promise<void> {
    await api.http
      .post('/api/v1/pipeline')
      .send({
        name,
        source: {
          fileAttributes: { format: 'csv' },
          schemaProperties: {
            fields: [
              { name: 'id', type: 'int' },
              { name: 'name', type: 'string' },
            ],
          },
        },
        destination: { rest },
      })
      .expect(200);
  }
  const url = (path: string) => `http://127.0.0.1:${sink.port}${path}`;
  const send = async (name: string, rows: number) => {
    const token = await upload(api.http, name, csv(rows), `${name}.csv`);
    return { token, ...(await waitForJob(api.http, token)) };
  };

  beforeAll(async () => {
    await sink.start();
    const flags = {
      TAPYARD_ENV: env,
      REST_SINK_ALLOW: `127.0.0.1:${sink.port}`,
      LOAD_RETRY_ATTEMPTS: '1',
    };
    api = await startApi(flags);
    worker = await startWorker(flags);
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    await api.http.put('/api/v1/secrets/hook').send({ token: 'hook-token-123' }).expect(200);
    await api.http.put('/api/v1/secrets/basic').send({ username: 'u', password: 'p w' }).expect(200);
    await api.http
      .put('/api/v1/secrets/keyed')
      .send({ headerName: 'X-Api-Key', apiKey: 'k-123' })
      .expect(200);
  }, 60000);
  afterAll(async () => {
    await pg.end();
    await worker.close();
    await api.close();
    await sink.stop();
  });

  it('sends NDJSON batches by PUT with the bearer token and an idempotency key per batch', async () => {
    await pipeline('nd', {
      url: url('/nd'),
      secretName: 'hook',
      method: 'PUT',
      batchSize: 2,
      format: 'ndjson',
    });
    const before = sink.requests.length;
    const { token, rollup } = await send('nd', 5);
    expect(rollup.status).toBe('success');
    // Batches travel side by side (they may arrive in any order): in batch order here.
    const reqs = sink.requests
      .slice(before)
      .filter((r) => r.path === '/nd' && r.method === 'PUT')
      .sort((a, b) =>
        String(a.headers['idempotency-key']).localeCompare(String(b.headers['idempotency-key'])),
      );
    expect(reqs.map((r) => r.rows)).toEqual([2, 2, 1]);
    expect(reqs.map((r) => r.headers['idempotency-key'])).toEqual([`${token}:0`, `${token}:1`, `${token}:2`]);
    expect(reqs[0].headers).toMatchObject({
      authorization: 'Bearer hook-token-123',
      'content-type': 'application/x-ndjson',
      'x-tapyard-pipeline': 'nd',
      'x-tapyard-pipeline-token': token,
    });
    expect(sink.rows('/nd').sort((a, b) => Number(a.id) - Number(b.id))).toEqual(
      [1, 2, 3, 4, 5].map((i) => ({ id: i, name: `n${i}` })),
    );
  });

  it('authenticates with basic credentials or an API-key header from the secret', async () => {
    await pipeline('basic', { url: url('/basic'), secretName: 'basic' });
    await pipeline('keyed', { url: url('/keyed'), secretName: 'keyed' });
    await send('basic', 1);
    await send('keyed', 1);
    const basic = sink.requests.find((r) => r.path === '/basic' && r.method === 'POST')!;
    expect(basic.headers.authorization).toBe(`Basic ${Buffer.from('u:p w').toString('base64')}`);
    expect(basic.headers['content-type']).toBe('application/json');
    // The body goes out in chunks (no copy), under a length that counts them all.
    expect(basic.headers['content-length']).toBe(String(basic.bytes));
    expect(basic.headers['transfer-encoding']).toBeUndefined();
    expect(sink.requests.find((r) => r.path === '/keyed' && r.method === 'POST')!.headers['x-api-key']).toBe(
      'k-123',
    );
  });

  it('retries 429 honouring Retry-After and 503, then delivers every row once', async () => {
    await pipeline('busy', { url: url('/busy'), batchSize: 10 });
    sink.fail({ status: 429, headers: { 'retry-after': '1' } }, { status: 503 });
    const { rollup } = await send('busy', 5);
    expect(rollup.status).toBe('success');
    const reqs = sink.requests.filter((r) => r.path === '/busy' && r.method === 'POST');
    expect(reqs).toHaveLength(3);
    expect(reqs[1].at - reqs[0].at).toBeGreaterThanOrEqual(900);
    expect(sink.rows('/busy')).toHaveLength(5);
  });

  it('a batch refused with 4xx becomes rejected rows with the status; the rest loads (warning)', async () => {
    await pipeline('picky', { url: url('/picky'), batchSize: 3 });
    sink.failBatch(0, { status: 422, body: '{"error":"name too short"}' });
    const { rollup } = await send('picky', 7);
    expect(rollup.status).toBe('warning');
    expect(
      sink
        .rows('/picky')
        .map((r) => Number(r.id))
        .sort((a, b) => a - b),
    ).toEqual([4, 5, 6, 7]);
    const { rows } = await pg.query(
      'SELECT line, reason, raw FROM tapyard.sink_rejects WHERE environment = $1 AND pipeline = $2 ORDER BY line',
      [env, 'picky'],
    );
    expect(rows.map((r: { line: number }) => r.line)).toEqual([2, 3, 4]);
    expect(JSON.parse(rows[0].raw)).toEqual({ id: 1, name: 'n1' });
    expect(rows[0].reason).toMatch(
      /^HTTP 422 from http:\/\/127\.0\.0\.1:\d+\/picky: \{"error":"name too short"\}/,
    );
  });

  it('retries a batch whose connection was reset before the answer, with the same key: stored once', async () => {
    await pipeline('reset', { url: url('/reset'), batchSize: 3 });
    // The receiver stores batch 1, then resets the connection: the sink must send it again, and
    // the receiver recognises the key (at-least-once, effectively once for a receiver honouring it).
    sink.resetBatch(1);
    const { token, rollup } = await send('reset', 8);
    expect(rollup.status).toBe('success');
    const keys = sink.requests
      .filter((r) => r.path === '/reset' && r.method === 'POST')
      .map((r) => String(r.headers['idempotency-key']))
      .sort();
    expect(keys).toEqual([`${token}:0`, `${token}:1`, `${token}:1`, `${token}:2`]);
    expect(
      sink
        .rows('/reset')
        .map((r) => Number(r.id))
        .sort((a, b) => a - b),
    ).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('keeps up to 4 batches in flight, never more, and each arrives once after a retry', async () => {
    await pipeline('wide', { url: url('/wide'), batchSize: 1 });
    sink.hang('/wide');
    const token = await upload(api.http, 'wide', csv(9), 'wide.csv');
    // The receiver answers nothing yet: only a sink that pipelines has several batches waiting.
    for (let i = 0; i < 200 && sink.hanging < 4; i++) await new Promise((r) => setTimeout(r, 50));
    expect(sink.hanging).toBe(4);
    const wide = () => sink.requests.filter((r) => r.path === '/wide' && r.method === 'POST');
    expect(new Set(wide().map((r) => r.headers['idempotency-key'])).size).toBe(4);
    sink.release('/wide');
    const { rollup } = await waitForJob(api.http, token);
    expect(rollup.status).toBe('success');
    expect(
      sink
        .rows('/wide')
        .map((r) => Number(r.id))
        .sort((a, b) => a - b),
    ).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(new Set(wide().map((r) => r.headers['idempotency-key'])).size).toBe(9);
  });

  it('keeps up to `concurrency` batches in flight: 8 when asked, and 1 sends each in order', async () => {
    await pipeline('eight', { url: url('/eight'), batchSize: 1, concurrency: 8 });
    await pipeline('one', { url: url('/one'), batchSize: 1, concurrency: 1 });
    // The receiver answers only once 8 requests are open (or 10 s passed: a loaded machine still opens 8 sooner): a sender keeping 4 reaches 4.
    sink.gate('/eight', 8);
    const eight = await send('eight', 16);
    expect(eight.rollup.status).toBe('success');
    expect(sink.maxOpen('/eight')).toBe(8);
    expect(sink.rows('/eight')).toHaveLength(16);
    // Answers held 300 ms unless a second request arrives: one in flight at a time, in batch order.
    sink.gate('/one', 2, 300);
    const one = await send('one', 5);
    expect(one.rollup.status).toBe('success');
    expect(sink.maxOpen('/one')).toBe(1);
    const keys = sink.requests
      .filter((r) => r.path === '/one' && r.method === 'POST')
      .map((r) => r.headers['idempotency-key']);
    expect(keys).toEqual([0, 1, 2, 3, 4].map((n) => `${one.token}:${n}`));
    expect(sink.rows('/one').map((r) => r.id)).toEqual([1, 2, 3, 4, 5]);
  });

  it('sends gzip-compressed bodies when asked, under Content-Encoding: gzip, the rows intact', async () => {
    await pipeline('zipped', { url: url('/zipped'), batchSize: 200, compression: 'gzip' });
    await pipeline('plain', { url: url('/plain'), batchSize: 200 });
    expect((await send('zipped', 400)).rollup.status).toBe('success');
    expect((await send('plain', 400)).rollup.status).toBe('success');
    const posts = (path: string) => sink.requests.filter((r) => r.path === path && r.method === 'POST');
    expect(posts('/zipped').map((r) => r.headers['content-encoding'])).toEqual(['gzip', 'gzip']);
    expect(posts('/plain').map((r) => r.headers['content-encoding'])).toEqual([undefined, undefined]);
    // The length announced is the compressed body's, a fraction of the same rows sent plain.
    for (const r of posts('/zipped')) expect(r.headers['content-length']).toBe(String(r.bytes));
    const bytes = (path: string) => posts(path).reduce((n, r) => n + r.bytes, 0);
    expect(bytes('/zipped') * 3).toBeLessThan(bytes('/plain'));
    expect(sink.rows('/zipped').sort((a, b) => Number(a.id) - Number(b.id))).toEqual(
      sink.rows('/plain').sort((a, b) => Number(a.id) - Number(b.id)),
    );
    expect(sink.rows('/zipped')).toHaveLength(400);
  });

  it('refuses a concurrency outside 1–16 or an unknown compression, naming the field', async () => {
    for (const [field, value] of [
      ['concurrency', 0],
      ['concurrency', 17],
      ['concurrency', 2.5],
      ['compression', 'br'],
    ] as const) {
      const res = await api.http
        .post('/api/v1/pipeline')
        .send(
          csvPipeline('too-many', 'x', [['id', 'int']], {
            destination: { rest: { url: url('/x'), [field]: value } },
          }),
        )
        .expect(400);
      expect(JSON.stringify(res.body)).toContain(field);
    }
  });

  it("sends a job's batches over at most 4 kept-alive connections", async () => {
    await pipeline('kept', { url: url('/kept'), batchSize: 2 });
    const { rollup } = await send('kept', 40);
    expect(rollup.status).toBe('success');
    const reqs = sink.requests.filter((r) => r.path === '/kept' && r.method === 'POST');
    expect(reqs).toHaveLength(20);
    expect(new Set(reqs.map((r) => r.clientPort)).size).toBeLessThanOrEqual(4);
    expect(sink.rows('/kept')).toHaveLength(40);
  });

  it('never follows a redirect: the batch is refused, saying so', async () => {
    await pipeline('moved', { url: url('/moved'), batchSize: 1 });
    sink.failBatch(0, { status: 302, headers: { location: 'http://169.254.169.254/latest/meta-data' } });
    const { rollup } = await send('moved', 2);
    expect(rollup.status).toBe('warning');
    expect(sink.requests.some((r) => r.path.startsWith('/latest'))).toBe(false);
    const { rows } = await pg.query(
      'SELECT reason FROM tapyard.sink_rejects WHERE environment = $1 AND pipeline = $2',
      [env, 'moved'],
    );
    expect(rows[0].reason).toMatch(/redirect, which is not followed/);
    expect(sink.rows('/moved')).toEqual([{ id: 2, name: 'n2' }]);
  });

  it.each([
    // The entry suggested is scoped to the pipeline's environment.
    ['a loopback port not allow-listed', () => 'http://127.0.0.1:1/x', `REST_SINK_ALLOW=${env}=127.0.0.1:1`],
    ['the cloud metadata address', () => 'http://169.254.169.254/latest/meta-data', /169\.254\.169\.254/],
    ['a private address over https', () => 'https://10.1.2.3/hook', /10\.1\.2\.3.*private/],
    ['a name resolving to loopback', () => 'https://localhost:8443/hook', /localhost:8443/],
  ])('refuses %s, naming the allow-list', async (_what, target, reason) => {
    const name = `ssrf_${Math.random().toString(36).slice(2, 8)}`;
    await pipeline(name, { url: target() });
    const { rollup } = await send(name, 1);
    expect(rollup.status).toBe('error');
    expect(rollup.jobs[0].lastError?.processName).toBe('RestEndpointRunner');
    expect(rollup.jobs[0].lastError?.description).toMatch(reason);
  });

  it('naming a secret in a pipeline needs secret:use (the credentials go to the address it names)', async () => {
    const keyed = await startApi({
      TAPYARD_ENV: env,
      USE_API_KEYS: 'true',
      TAPYARD_BOOTSTRAP_API_KEY: admin,
    });
    try {
      const editor = await issueKey(keyed.http, admin, 'pipeline-editor', { capabilities: ['pipeline:*'] });
      const body = (name: string, rest: Record<string, unknown>) => ({
        name,
        source: {
          fileAttributes: { format: 'csv' },
          schemaProperties: { fields: [{ name: 'id', type: 'int' }] },
        },
        destination: { rest },
      });
      const res = await keyed.http
        .post('/api/v1/pipeline')
        .set('x-api-key', editor)
        .send(body('steal', { url: 'https://attacker.example/collect', secretName: 'hook' }))
        .expect(403);
      expect(res.body.message).toContain('secret:use');
      await keyed.http
        .post('/api/v1/pipeline')
        .set('x-api-key', editor)
        .send(body('nosecret', { url: 'https://example.com/collect' }))
        .expect(200);
    } finally {
      await keyed.close();
    }
  });
});
