import type TestAgent from 'supertest/lib/agent';

export interface RollupAnswer {
  rollup: {
    allDone: boolean;
    status: string;
    jobs: {
      pipelineToken: string;
      status: string;
      lastError: { processName: string; description: string } | null;
      elapsed: string;
      startedAt: string;
      lastEventAt: string;
      filename: string;
      pipeline: string;
    }[];
  };
  events: {
    processName: string;
    state: string;
    description: string;
    code: string;
    id: number;
    epoch: number;
  }[];
}

/** Uploads a file through the real HTTP route; returns the pipeline token. */
export async function upload(
  http: TestAgent,
  pipeline: string,
  content: string | Buffer,
  filename = 'data.csv',
  publisherToken?: string,
): Promise<string> {
  let req = http.post('/api/v1/pipeline/upload').field('pipeline', pipeline);
  if (publisherToken) req = req.field('publishertoken', publisherToken);
  const res = await req
    .attach('file', Buffer.isBuffer(content) ? content : Buffer.from(content), filename)
    .expect(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain/);
  return res.text;
}

/** Polls the rollup as a client would, until every job is done. */
export async function waitForJob(http: TestAgent, token: string, timeoutMs = 120_000): Promise<RollupAnswer> {
  const start = Date.now();
  for (;;) {
    const res = await http
      .get('/api/v1/pipeline/status')
      .query({ pipelinetoken: token, withrollup: 'true' })
      .expect(200);
    const body = res.body as RollupAnswer;
    if (body.rollup.allDone) {
      // Surfaces the reason in a failing test's output.
      if (body.rollup.status === 'error')
        console.log('job error:', JSON.stringify(body.rollup.jobs.map((j) => j.lastError)));
      return body;
    }
    if (Date.now() - start > timeoutMs)
      throw new Error(`job ${token} not done: ${JSON.stringify(body.rollup)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export function csvPipeline(
  name: string,
  table: string,
  fields: [string, string][],
  extra: Record<string, unknown> = {},
) {
  return {
    name,
    source: {
      fileAttributes: { csvAttributes: { delimiter: ',', header: true } },
      schemaProperties: { fields: fields.map(([n, type]) => ({ name: n, type })) },
    },
    destination: { database: { dbName: 'tapyard_test', schema: 'ingest_test', table, usePostgres: true } },
    ...extra,
  };
}

/** Creates a CSV pipeline of two columns, `id` (int) and `label` (string), loading into `table`. */
export async function idLabelPipeline(http: TestAgent, name: string, table: string): Promise<void> {
  await http
    .post('/api/v1/pipeline')
    .send(
      csvPipeline(name, table, [
        ['id', 'int'],
        ['label', 'string'],
      ]),
    )
    .expect(200);
}

/** Polls the rollup of a publisher token until every job is done (tap runs, archives). */
export async function waitForPublisher(
  http: TestAgent,
  token: string,
  timeoutMs = 120_000,
): Promise<RollupAnswer> {
  const start = Date.now();
  for (;;) {
    const res = await http
      .get('/api/v1/pipeline/status')
      .query({ publishertoken: token, withrollup: 'true' })
      .expect(200);
    const body = res.body as RollupAnswer;
    if (body.rollup.allDone && body.rollup.jobs.length > 0) return body;
    if (Date.now() - start > timeoutMs)
      throw new Error(`jobs of ${token} not done after ${timeoutMs} ms: ${JSON.stringify(body.rollup)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * The API as one API key calls it: a JSON POST, a GET, and an upload waited on to its job's end.
 * `http`: the agent, read at each call (a suite starts its API in beforeAll).
 */
export function keyed(http: () => TestAgent) {
  const post = (key: string, path: string, body: unknown) =>
    http()
      .post(`/api/v1${path}`)
      .set('x-api-key', key)
      .send(body as object);
  const get = (key: string, path: string, query: Record<string, string>) =>
    http().get(`/api/v1${path}`).query(query).set('x-api-key', key);
  /** Uploads `content` as a file (a CSV one unless named) and answers its (first) job once every job is done. */
  async function load(key: string, pipeline: string, content: string, filename = 'rows.csv') {
    const res = await http()
      .post('/api/v1/pipeline/upload')
      .set('x-api-key', key)
      .field('pipeline', pipeline)
      .attach('file', Buffer.from(content), filename)
      .expect(200);
    const deadline = Date.now() + 60_000;
    for (;;) {
      const body = (
        await get(key, '/pipeline/status', { pipelinetoken: res.text, withrollup: 'true' }).expect(200)
      ).body as RollupAnswer;
      if (body.rollup.allDone) return body.rollup.jobs[0];
      if (Date.now() > deadline) throw new Error(`job not done: ${JSON.stringify(body.rollup)}`);
      await new Promise((done) => setTimeout(done, 100));
    }
  }
  return { post, get, load };
}
