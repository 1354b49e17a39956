import { Pool } from 'pg';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { auditLines, issueKey, login, newBootstrapKey } from './support/auth';
import { TEST_DATABASE_URL, TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { ModelDouble } from './support/model-double';
import { closedPort } from './support/net';

interface SseEvent {
  event: string;
  data: Record<string, unknown>;
}

/**
 * The Assistant over Server-Sent Events against the real API, worker, PostgreSQL, MinIO and sandbox,
 * the model played by the OpenAI wire double (streaming, tool calls) through the official client.
 */
describe('assistant: the build-mode agent loop over SSE', () => {
  const env = uniqueEnvironment('assist');
  const schema = `as_${env.replace(/[^a-z0-9]/g, '_')}`.slice(0, 60);
  const admin = newBootstrapKey();
  const double = new ModelDouble();
  let api: TestApi;
  let worker: TestWorker;
  let base: string;
  let pg: Pool;
  let viewer: string;
  let other: string;

  /** Posts a chat and reads the whole stream: the events, the raw text and the response head. */
  async function chat(
    key: string,
    body: Record<string, unknown>,
  ): Promise<{ status: number; headers: Headers; events: SseEvent[]; raw: string }> {
    const res = await fetch(`${base}/assistant/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify(body),
    });
    const raw = await res.text();
    const events = raw
      .split('\n\n')
      .map((block) => block.split('\n'))
      .filter((lines) => lines.some((l) => l.startsWith('event: ')))
      .map((lines) => ({
        event: lines.find((l) => l.startsWith('event: '))!.slice(7),
        data: JSON.parse(lines.find((l) => l.startsWith('data: '))!.slice(6)) as Record<string, unknown>,
      }));
    return { status: res.status, headers: res.headers, events, raw };
  }

  async function attach(
    key: string,
    filename: string,
    content: Buffer | string,
    type = 'text/csv',
  ): Promise<Response> {
    const form = new FormData();
    form.append('file', new Blob([content], { type }), filename);
    return fetch(`${base}/assistant/attachment`, {
      method: 'POST',
      headers: { 'x-api-key': key },
      body: form,
    });
  }

  beforeAll(async () => {
    await double.start();
    const port = await closedPort();
    base = `http://127.0.0.1:${port}/api/v1`;
    const flags = {
      TAPYARD_ENV: env,
      ...TEST_OBJECT_STORE,
      TAP_EGRESS_ALLOW: double.address,
      USE_API_KEYS: 'true',
      TAPYARD_BOOTSTRAP_API_KEY: admin,
      ASSISTANT_KEEPALIVE_MS: '200',
      PORT: String(port),
      HOST: '127.0.0.1',
    };
    api = await startApi(flags);
    await api.app.listen(port, '127.0.0.1');
    worker = await startWorker(flags);
    pg = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
    await pg.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await api.http
      .put('/api/v1/secrets/ai')
      .set('x-api-key', admin)
      .send({
        provider: 'openai-compatible',
        baseUrl: double.openaiUrl,
        model: 'm',
        'model.assistant': 'agent-1',
      })
      .expect(200);
    await api.http
      .post('/api/v1/pipeline')
      .set('x-api-key', admin)
      .send({
        name: 'sales',
        source: {
          fileAttributes: { format: 'csv' },
          schemaProperties: { fields: [{ name: 'id', type: 'int' }] },
        },
        destination: { database: { schema, table: 'sales' } },
      })
      .expect(200);
    viewer = await issueKey(api.http, admin, 'viewer-key', {
      capabilities: ['pipeline:read', 'job:read', 'assistant:run'],
    });
    other = await issueKey(api.http, admin, 'other-key', {
      capabilities: ['pipeline:read', 'pipeline:upload', 'assistant:run'],
    });
  }, 60000);
  afterAll(async () => {
    await pg.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pg.end();
    await worker.close();
    await api.close();
    await double.stop();
  });
  beforeEach(() => double.reset());

  it('streams a multi-round conversation with two tool calls, results going back to the model', async () => {
    double.script(
      {
        text: 'Let me look.',
        toolCalls: [
          { name: 'list_pipelines', arguments: {} },
          { name: 'get_pipeline', arguments: { name: 'sales' } },
        ],
      },
      { text: 'You have one pipeline, sales, loading into a table.' },
    );
    const r = await chat(admin, {
      messages: [{ role: 'user', content: 'what pipelines do I have?' }],
      context: { page: 'home' },
    });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(r.headers.get('x-accel-buffering')).toBe('no');
    const kinds = r.events.map((e) => e.event);
    expect(kinds.filter((k) => k === 'text').length).toBeGreaterThan(1);
    expect(r.events.filter((e) => e.event === 'tool_call').map((e) => e.data.name)).toEqual([
      'list_pipelines',
      'get_pipeline',
    ]);
    const results = r.events.filter((e) => e.event === 'tool_result');
    expect((results[0].data.result as { name: string }[]).map((p) => p.name)).toEqual(['sales']);
    expect(results[1].data.result).toMatchObject({ name: 'sales', version: 1 });
    expect(r.events[r.events.length - 1]).toEqual({
      event: 'done',
      data: { iterations: 2, stopReason: 'complete' },
    });
    const text = r.events
      .filter((e) => e.event === 'text')
      .map((e) => e.data.delta)
      .join('');
    expect(text).toBe('Let me look.You have one pipeline, sales, loading into a table.');
    // The second round carries both tool results back, in the OpenAI tool-message shape.
    const second = double.calls[1].body.messages as {
      role: string;
      tool_call_id?: string;
      content: string;
    }[];
    expect(second.filter((m) => m.role === 'tool')).toHaveLength(2);
    expect(double.calls[0].body).toMatchObject({ model: 'agent-1', stream: true });
    expect(ModelDouble.promptText(double.calls[0])).toContain('{"page":"home"}');
  });

  it("denies a tool the caller lacks: the denial is the tool result the model sees, audited with the caller's key", async () => {
    double.script(
      {
        toolCalls: [
          {
            name: 'register_pipeline',
            arguments: {
              config: {
                name: 'evil',
                source: {
                  fileAttributes: { format: 'csv' },
                  schemaProperties: { fields: [{ name: 'a', type: 'int' }] },
                },
                destination: { database: { schema, table: 'evil' } },
              },
            },
          },
        ],
      },
      { text: 'You may not create pipelines.' },
    );
    const r = await chat(viewer, { messages: [{ content: 'create a pipeline evil' }] });
    const result = r.events.find((e) => e.event === 'tool_result')!;
    expect(result.data).toEqual({
      id: expect.any(String),
      name: 'register_pipeline',
      error: expect.stringMatching(/^403: 'viewer-key' lacks the capability pipeline:update/),
    });
    expect(JSON.stringify(double.calls[1].body.messages)).toContain('lacks the capability pipeline:update');
    await api.http.get('/api/v1/pipeline').query({ pipeline: 'evil' }).set('x-api-key', admin).expect(404);
    expect(auditLines(api.logs)).toContainEqual(
      expect.objectContaining({
        route: 'assistant tool register_pipeline',
        key: 'viewer-key',
        outcome: 'deny',
        required: 'pipeline:update',
      }),
    );
    expect(r.events[r.events.length - 1].data).toEqual({ iterations: 2, stopReason: 'complete' });
  });

  it('scopes tools like their routes: a catalog-scoped key cannot test an uncataloged tap, lists only its databases', async () => {
    const scoped = await issueKey(api.http, admin, 'scoped-key', {
      capabilities: ['assistant:run', 'tap:run:catalog=a', 'metadata:read:database=nothing_here'],
    });
    double.script(
      {
        toolCalls: [
          {
            name: 'test_tap',
            arguments: { name: 'brand_new', script: 'def fetch():\n    return [{"a": 1}]\n' },
          },
          { name: 'discover_metadata', arguments: { kind: 'databases' } },
        ],
      },
      { text: 'ok' },
    );
    const r = await chat(scoped, { messages: [{ content: 'test a new tap, list collections' }] });
    const [test, meta] = r.events.filter((e) => e.event === 'tool_result').map((e) => e.data);
    expect(test.error).toBe("404: tap 'brand_new' does not exist");
    expect(meta.result).toEqual([]);
  });

  it('register_pipeline needs secret:use for a section naming a secret, as POST /pipeline does', async () => {
    const builder = await issueKey(api.http, admin, 'builder-key', {
      capabilities: ['assistant:run', 'pipeline:*'],
    });
    await api.http
      .put('/api/v1/secrets/hook')
      .set('x-api-key', admin)
      .send({ token: 'secret-token-value' })
      .expect(200);
    double.script(
      {
        toolCalls: [
          {
            name: 'register_pipeline',
            arguments: {
              config: {
                name: 'exfil',
                source: {
                  fileAttributes: { format: 'csv' },
                  schemaProperties: { fields: [{ name: 'a', type: 'int' }] },
                },
                destination: { rest: { url: 'https://collector.example/x', secretName: 'hook' } },
              },
            },
          },
        ],
      },
      { text: 'denied' },
    );
    const r = await chat(builder, { messages: [{ content: 'send my rows to the collector' }] });
    expect(r.events.find((e) => e.event === 'tool_result')!.data.error).toMatch(/^403: .*secret:use/);
    await api.http.get('/api/v1/pipeline').query({ pipeline: 'exfil' }).set('x-api-key', admin).expect(404);
  });

  it('stops at maxIterations: no tool of the last round runs', async () => {
    for (let i = 0; i < 3; i++) double.script({ toolCalls: [{ name: 'list_taps', arguments: {} }] });
    const r = await chat(admin, { messages: [{ content: 'loop forever' }], maxIterations: 2 });
    expect(r.events.filter((e) => e.event === 'tool_result')).toHaveLength(1);
    expect(r.events[r.events.length - 1]).toEqual({
      event: 'done',
      data: { iterations: 2, stopReason: 'max_iterations' },
    });
    expect(double.calls).toHaveLength(2);
  });

  it('reports a provider failure as an error event, then done', async () => {
    double.script({ status: 400, message: 'context too long' });
    const r = await chat(admin, { messages: [{ content: 'hi' }] });
    expect(r.events.map((e) => e.event)).toEqual(['error', 'done']);
    expect(r.events[1].data).toEqual({ iterations: 1, stopReason: 'error' });
  });

  it('sends keep-alive comments during a long tool call (a tap test in the sandbox)', async () => {
    const script = 'import time\ndef fetch():\n    time.sleep(1.2)\n    return [{"a": 1}]\n';
    double.script(
      { toolCalls: [{ name: 'test_tap', arguments: { name: 'slow', script } }] },
      { text: 'It returned one row.' },
    );
    const r = await chat(admin, { messages: [{ content: 'test it' }] });
    expect(r.raw).toContain(': keep-alive\n\n');
    expect(r.events.find((e) => e.event === 'tool_result')!.data.result).toMatchObject({
      recordCount: 1,
      error: null,
    });
  });

  it('on client disconnect aborts the model call (the provider sees the request close) and audits cancelled', async () => {
    double.script({ hang: true });
    const abort = new AbortController();
    const pending = fetch(`${base}/assistant/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': admin },
      body: JSON.stringify({ messages: [{ content: 'slow one' }] }),
      signal: abort.signal,
    })
      .then(async (res) => {
        await res.body!.getReader().read();
      })
      .catch(() => undefined);
    while (double.calls.length === 0) await new Promise((r) => setTimeout(r, 20));
    abort.abort();
    await double.waitForEarlyClose();
    await pending;
    await waitFor(() =>
      api.logs.parsed().some((l) => l.msg === 'assistant chat' && l.stopReason === 'cancelled'),
    );
    expect(double.calls).toHaveLength(1);
  });

  it('attachments: typed, per caller, and usable by the tools (generate, register, upload, status)', async () => {
    await attach(admin, 'tool.exe', 'MZ...', 'application/octet-stream').then((r) =>
      expect(r.status).toBe(415),
    );
    await attach(admin, 'fake.pdf', 'not a pdf', 'application/pdf').then((r) => expect(r.status).toBe(415));
    await attach(admin, 'binary.csv', Buffer.from([0x61, 0, 0x62])).then((r) => expect(r.status).toBe(415));
    const up = await attach(admin, 'orders.csv', 'id,amount\n1,9.5\n2,7.25\n3,1\n');
    expect(up.status).toBe(201);
    const att = (await up.json()) as {
      attachmentId: string;
      filename: string;
      size: number;
      contentType: string;
    };
    expect(att).toMatchObject({ filename: 'orders.csv', size: 27, contentType: 'text/csv' });

    // Another identity cannot use it: 404 for the chat, and as a tool argument.
    const denied = await fetch(`${base}/assistant/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': other },
      body: JSON.stringify({
        messages: [{ content: 'x' }],
        attachments: [{ attachmentId: att.attachmentId }],
      }),
    });
    expect(denied.status).toBe(404);
    double.script(
      {
        toolCalls: [
          { name: 'upload_attachment', arguments: { attachmentId: att.attachmentId, pipeline: 'sales' } },
        ],
      },
      { text: 'no' },
    );
    const stolen = await chat(other, { messages: [{ content: 'load it' }] });
    expect(stolen.events.find((e) => e.event === 'tool_result')!.data.error).toMatch(/^404: attachment/);

    double.reset();
    double.script(
      {
        toolCalls: [
          {
            name: 'generate_pipeline_from_attachment',
            arguments: { attachmentId: att.attachmentId, name: 'orders' },
          },
        ],
      },
      { text: 'Proposed.' },
    );
    const gen = await chat(admin, {
      messages: [{ content: 'make a pipeline from it' }],
      attachments: [{ attachmentId: att.attachmentId }],
    });
    const proposal = gen.events.find((e) => e.event === 'tool_result')!.data.result as Record<
      string,
      unknown
    > & { destination: { database: Record<string, unknown> } };
    expect(proposal).toMatchObject({
      name: 'orders',
      source: {
        schemaProperties: {
          fields: [
            { name: 'id', type: 'int' },
            { name: 'amount', type: 'float' },
          ],
        },
      },
    });
    expect(ModelDouble.promptText(double.calls[0])).toContain(att.attachmentId);

    const config = { ...proposal, destination: { database: { ...proposal.destination.database, schema } } };
    double.reset();
    double.script(
      { toolCalls: [{ name: 'register_pipeline', arguments: { config } }] },
      {
        toolCalls: [
          { name: 'upload_attachment', arguments: { attachmentId: att.attachmentId, pipeline: 'orders' } },
        ],
      },
      { text: 'Loading.' },
    );
    const load = await chat(admin, {
      messages: [{ content: 'register and load it' }],
      attachments: [{ attachmentId: att.attachmentId }],
    });
    const results = load.events.filter((e) => e.event === 'tool_result').map((e) => e.data);
    expect(results[0].result).toMatchObject({ status: 'ok', name: 'orders', version: 1 });
    const { pipelineToken } = results[1].result as { pipelineToken: string };
    await waitFor(async () => {
      const { rows } = await pg
        .query(`SELECT count(*)::int AS n FROM "${schema}".orders`)
        .catch(() => ({ rows: [{ n: 0 }] }));
      return rows[0].n === 3;
    });
    double.reset();
    double.script({ toolCalls: [{ name: 'job_status', arguments: { pipelineToken } }] }, { text: 'Done.' });
    const status = await chat(admin, { messages: [{ content: 'is it done?' }] });
    expect(status.events.find((e) => e.event === 'tool_result')!.data.result).toMatchObject({
      rollup: { allDone: true, status: 'success' },
    });
  });

  it('runs the same loop through Anthropic: tool results go back as tool_result blocks', async () => {
    const put = (fields: Record<string, string>) =>
      api.http.put('/api/v1/secrets/ai').set('x-api-key', admin).send(fields).expect(200);
    await put({
      provider: 'anthropic',
      baseUrl: double.anthropicUrl,
      apiKey: 'sk-ant',
      model: 'claude-agent',
    });
    try {
      double.script(
        { text: 'Checking.', toolCalls: [{ name: 'get_pipeline', arguments: { name: 'sales' } }] },
        { text: 'It exists.' },
      );
      const r = await chat(admin, { messages: [{ content: 'is there a sales pipeline?' }] });
      expect(r.events.find((e) => e.event === 'tool_result')!.data.result).toMatchObject({ name: 'sales' });
      expect(r.events[r.events.length - 1].data).toEqual({ iterations: 2, stopReason: 'complete' });
      const second = double.calls[1];
      expect(second.protocol).toBe('anthropic');
      const messages = second.body.messages as { role: string; content: unknown }[];
      expect(messages[1]).toMatchObject({
        role: 'assistant',
        content: [
          { type: 'text', text: 'Checking.' },
          { type: 'tool_use', name: 'get_pipeline' },
        ],
      });
      expect(messages[2]).toMatchObject({ role: 'user', content: [{ type: 'tool_result' }] });
    } finally {
      await put({
        provider: 'openai-compatible',
        baseUrl: double.openaiUrl,
        model: 'm',
        'model.assistant': 'agent-1',
      });
    }
  });

  it('answers 503 naming the secret when no provider is configured (before the stream starts)', async () => {
    await api.http.delete('/api/v1/secrets/ai').set('x-api-key', admin).expect(200);
    try {
      const res = await api.http
        .post('/api/v1/assistant/chat')
        .set('x-api-key', admin)
        .send({ messages: [{ content: 'hi' }] })
        .expect(503);
      expect(res.body.message).toContain("secret 'ai'");
    } finally {
      await api.http
        .put('/api/v1/secrets/ai')
        .set('x-api-key', admin)
        .send({
          provider: 'openai-compatible',
          baseUrl: double.openaiUrl,
          model: 'm',
          'model.assistant': 'agent-1',
        })
        .expect(200);
    }
  });
});

async function waitFor(check: () => boolean | Promise<boolean>, ms = 60000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("assistant in a viewer's login session", () => {
  const env = uniqueEnvironment('assistsess');
  const double = new ModelDouble();
  const ADMIN_PASSWORD = 'admin-password-for-assistant-1';
  let api: TestApi;

  beforeAll(async () => {
    await double.start();
    api = await startApi({
      TAPYARD_ENV: env,
      ...TEST_OBJECT_STORE,
      TAP_EGRESS_ALLOW: double.address,
      USE_USER_AUTH: 'true',
      TAPYARD_ADMIN_PASSWORD: ADMIN_PASSWORD,
    });
    const admin = await login(api.http, 'admin', ADMIN_PASSWORD);
    const as = <T extends { set(k: string, v: string): T }>(req: T) =>
      req.set('cookie', admin.cookie).set('x-csrf-token', admin.csrf);
    await as(api.http.put('/api/v1/secrets/ai'))
      .send({ provider: 'openai-compatible', baseUrl: double.openaiUrl, model: 'm' })
      .expect(200);
    await as(api.http.post('/api/v1/users'))
      .send({ username: 'vera', password: 'vera-password-12345', role: 'viewer' })
      .expect(201);
  }, 60000);
  afterAll(async () => {
    await api.close();
    await double.stop();
  });

  it("cannot register a pipeline: the denial is the tool's result, audited as session:<username>", async () => {
    const vera = await login(api.http, 'vera', 'vera-password-12345');
    double.script(
      {
        toolCalls: [
          {
            name: 'register_pipeline',
            arguments: {
              config: {
                name: 'x',
                source: { schemaProperties: { fields: [{ name: 'a', type: 'int' }] } },
                destination: { database: { table: 'x' } },
              },
            },
          },
        ],
      },
      { text: 'I cannot do that for you.' },
    );
    const res = await api.http
      .post('/api/v1/assistant/chat')
      .set('cookie', vera.cookie)
      .set('x-csrf-token', vera.csrf)
      .send({ messages: [{ content: 'register pipeline x' }] })
      .expect(200);
    expect(res.text).toContain('"error":"403: \'session:vera\' lacks the capability pipeline:update');
    expect(res.text).toContain('event: done\ndata: {"iterations":2,"stopReason":"complete"}');
    expect(auditLines(api.logs)).toContainEqual(
      expect.objectContaining({
        route: 'assistant tool register_pipeline',
        key: 'session:vera',
        outcome: 'deny',
      }),
    );
  });
});
