import { AddressInfo } from 'node:net';
import { createServer } from 'node:http';
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { issueKey, login, newBootstrapKey } from './support/auth';
import { TEST_OBJECT_STORE, testEnv, uniqueEnvironment } from './support/env';
import { ModelDouble } from './support/model-double';
import { closedPort } from './support/net';
import { Spawned, spawnApp } from './support/processes';

interface SseEvent {
  event: string;
  data: Record<string, unknown>;
}

/** SSE blocks of a text so far: the complete ones, and what is left of an unfinished one. */
function parseEvents(raw: string): SseEvent[] {
  return raw
    .split('\n\n')
    .slice(0, -1)
    .map((block) => block.split('\n'))
    .filter((lines) => lines.some((l) => l.startsWith('event: ')))
    .map((lines) => ({
      event: lines.find((l) => l.startsWith('event: '))!.slice(7),
      data: JSON.parse(lines.find((l) => l.startsWith('data: '))!.slice(6)) as Record<string, unknown>,
    }));
}

/**
 * Two built API processes behind no shared process state (only PostgreSQL, Redis and the object store)
 * and one worker: whatever one replica grants, counts or starts, the other honours.
 */
describe('API replicas answer the same', () => {
  const env = uniqueEnvironment('replicas');
  const boot = newBootstrapKey();
  const ADMIN_PASSWORD = 'replicas-admin-password-1';
  const double = new ModelDouble();
  const outside = createServer((_req, res) => res.end('ok'));
  let a: Spawned;
  let b: Spawned;
  let worker: Spawned;
  let httpA: TestAgent;
  let httpB: TestAgent;
  let baseA: string;
  let baseB: string;

  beforeAll(async () => {
    await double.start();
    await new Promise<void>((resolve) => outside.listen(0, '127.0.0.1', resolve));
    const flags = testEnv({
      TAPYARD_ENV: env,
      ...TEST_OBJECT_STORE,
      USE_API_KEYS: 'true',
      USE_USER_AUTH: 'true',
      TAPYARD_BOOTSTRAP_API_KEY: boot,
      TAPYARD_ADMIN_PASSWORD: ADMIN_PASSWORD,
      TAP_EGRESS_ALLOW: `${double.address},127.0.0.1:${(outside.address() as AddressInfo).port}`,
      // Long enough that no back-off ends while the test looks at it.
      LOGIN_BACKOFF_AFTER: '3',
      LOGIN_BACKOFF_SECONDS: '600',
      TAP_SCHEDULER_MS: '100',
      LOG_LEVEL: 'info',
      HOST: '127.0.0.1',
    });
    const [portA, portB] = [await closedPort(), await closedPort()];
    a = spawnApp('api', { ...flags, PORT: String(portA) });
    b = spawnApp('api', { ...flags, PORT: String(portB) });
    worker = spawnApp('worker', flags);
    await Promise.all([
      a.waitFor(/Tapyard API listening/),
      b.waitFor(/Tapyard API listening/),
      worker.waitFor(/Tapyard worker ready/),
    ]);
    baseA = `http://127.0.0.1:${portA}`;
    baseB = `http://127.0.0.1:${portB}`;
    httpA = request(baseA);
    httpB = request(baseB);
    await httpA
      .put('/api/v1/secrets/ai')
      .set('x-api-key', boot)
      .send({ provider: 'openai-compatible', baseUrl: double.openaiUrl, model: 'm' })
      .expect(200);
  }, 180_000);

  afterAll(async () => {
    for (const p of [a, b, worker]) p?.child.kill('SIGTERM');
    await Promise.all([a?.exited, b?.exited, worker?.exited]);
    await double.stop();
    await new Promise<void>((resolve) => outside.close(() => resolve()));
  });
  beforeEach(() => double.reset());

  it('a key issued, a session opened or a key revoked on A holds on B', async () => {
    const key = await issueKey(httpA, boot, 'replica-viewer', { template: 'read-only' });
    expect((await httpB.get('/api/v1/auth/me').set('x-api-key', key).expect(200)).body).toMatchObject({
      kind: 'key',
      identity: expect.stringContaining('replica-viewer'),
    });

    const session = await login(httpA, 'admin', ADMIN_PASSWORD);
    expect((await httpB.get('/api/v1/auth/me').set('cookie', session.cookie).expect(200)).body).toMatchObject(
      {
        username: 'admin',
      },
    );
    // A cookie-authenticated write on B with the CSRF token A handed out.
    await httpB
      .post('/api/v1/users')
      .set('cookie', session.cookie)
      .set('x-csrf-token', session.csrf)
      .send({ username: 'lia', password: 'lia-password-123456', role: 'viewer' })
      .expect(201);

    await httpA.delete('/api/v1/keys/replica-viewer').set('x-api-key', boot).expect(200);
    await httpB.get('/api/v1/auth/me').set('x-api-key', key).expect(401);
    await httpA.post('/api/v1/auth/logout').set('cookie', session.cookie).set('x-csrf-token', session.csrf);
    await httpB.get('/api/v1/auth/me').set('cookie', session.cookie).expect(401);
  });

  it('failed logins counted on A hold the back-off on B, even for the right password', async () => {
    await httpA
      .post('/api/v1/users')
      .set('x-api-key', boot)
      .send({ username: 'omar', password: 'omar-password-123456', role: 'viewer' })
      .expect(201);
    for (let i = 0; i < 3; i++) {
      await httpA.post('/api/v1/auth/login').send({ username: 'omar', password: 'wrong-guess' }).expect(401);
    }
    const held = await httpB
      .post('/api/v1/auth/login')
      .send({ username: 'omar', password: 'omar-password-123456' })
      .expect(429);
    expect(Number(held.headers['retry-after'])).toBeGreaterThan(0);
    await httpA
      .post('/api/v1/auth/login')
      .send({ username: 'omar', password: 'omar-password-123456' })
      .expect(429);
  });

  /** Posts a chat to a replica and reads the whole stream. */
  async function chat(base: string, key: string, body: Record<string, unknown>): Promise<SseEvent[]> {
    const res = await fetch(`${base}/api/v1/assistant/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    return parseEvents(await res.text());
  }

  it('an assistant action proposed through A is confirmed through B, and runs once', async () => {
    const config = {
      name: 'via_b',
      source: {
        fileAttributes: { format: 'csv' },
        schemaProperties: { fields: [{ name: 'a', type: 'int' }] },
      },
      destination: { database: { schema: 'public', table: `via_b_${env.replace(/[^a-z0-9]/g, '_')}` } },
    };
    double.script(
      { toolCalls: [{ name: 'register_pipeline', arguments: { config } }] },
      { text: 'registered' },
    );
    const proposed = await chat(baseA, boot, { messages: [{ content: 'register it' }] });
    const pending = proposed.filter((e) => e.event === 'pending_action');
    expect(pending).toHaveLength(1);
    const { actionId, conversationId } = pending[0].data as { actionId: string; conversationId: string };
    await httpB.get('/api/v1/pipeline').query({ pipeline: 'via_b' }).set('x-api-key', boot).expect(404);

    const confirmed = await chat(baseB, boot, {
      messages: [{ content: 'yes' }],
      conversationId,
      confirm: actionId,
    });
    const result = confirmed.find((e) => e.event === 'tool_result');
    expect(result?.data.name).toBe('register_pipeline');
    expect(result?.data.error).toBeUndefined();
    await httpA.get('/api/v1/pipeline').query({ pipeline: 'via_b' }).set('x-api-key', boot).expect(200);
    // Taken once: a second answer, on either replica, finds nothing.
    const again = await fetch(`${baseA}/api/v1/assistant/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': boot },
      body: JSON.stringify({ messages: [{ content: 'again' }], conversationId, confirm: actionId }),
    });
    expect(again.status).toBe(404);
  });

  it('a turn streaming from A is cancelled through B by its own caller only; the stream ends done cancelled', async () => {
    const other = await issueKey(httpA, boot, 'replica-other', { capabilities: ['assistant:run'] });
    double.script({ hang: true });
    const res = await fetch(`${baseA}/api/v1/assistant/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': boot },
      body: JSON.stringify({ messages: [{ content: 'a slow question' }] }),
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let raw = '';
    const readUntil = async (done: (events: SseEvent[]) => boolean): Promise<SseEvent[]> => {
      for (;;) {
        const events = parseEvents(raw);
        if (done(events)) return events;
        const chunk = await reader.read();
        if (chunk.done) return parseEvents(raw);
        raw += decoder.decode(chunk.value, { stream: true });
      }
    };
    const [first] = await readUntil((events) => events.length > 0);
    expect(first.event).toBe('turn');
    const turnId = first.data.turnId as string;
    expect(turnId).toEqual(expect.any(String));
    // The model call is in flight (and hangs) before anyone cancels.
    for (let i = 0; double.calls.length === 0; i++) {
      if (i > 3000) throw new Error('the model was never called');
      await new Promise((r) => setTimeout(r, 20));
    }

    const refused = await httpB
      .post('/api/v1/assistant/chat/cancel')
      .set('x-api-key', other)
      .send({ turnId })
      .expect(404);
    expect(refused.body.message).toContain('no running assistant turn');
    expect(
      (await httpB.post('/api/v1/assistant/chat/cancel').set('x-api-key', boot).send({ turnId }).expect(202))
        .body,
    ).toEqual({ turnId, status: 'cancelling' });

    const events = await readUntil(() => false);
    expect(events[events.length - 1]).toEqual({
      event: 'done',
      data: { iterations: 1, stopReason: 'cancelled' },
    });
    await double.waitForEarlyClose();
    // The turn has ended: it can no longer be cancelled, on either replica.
    await httpA.post('/api/v1/assistant/chat/cancel').set('x-api-key', boot).send({ turnId }).expect(404);
  });

  it('a schedule fire time runs once, with both replicas and the worker running', async () => {
    await httpA
      .post('/api/v1/pipeline')
      .set('x-api-key', boot)
      .send({
        name: 'ticks',
        source: {
          fileAttributes: { format: 'csv' },
          schemaProperties: { fields: [{ name: 'n', type: 'int' }] },
        },
        destination: { database: { schema: 'public', table: `ticks_${env.replace(/[^a-z0-9]/g, '_')}` } },
      })
      .expect(200);
    // One fire time only (Quartz with a year, UTC), a few seconds ahead.
    const at = new Date(Date.now() + 4000);
    const cron = `${at.getUTCSeconds()} ${at.getUTCMinutes()} ${at.getUTCHours()} ${at.getUTCDate()} ${at.getUTCMonth() + 1} ? ${at.getUTCFullYear()}`;
    await httpB
      .post('/api/v1/tap')
      .set('x-api-key', boot)
      .send({
        name: 'once',
        script: 'def fetch():\n    return [{"n": 1}]\n',
        targetPipeline: 'ticks',
        cronExpression: cron,
        enabled: true,
      })
      .expect(200);
    type Run = { trigger: string; status: string };
    for (let i = 0; ; i++) {
      const runs = (
        await httpA.get('/api/v1/tap/runs').query({ name: 'once' }).set('x-api-key', boot).expect(200)
      ).body as Run[];
      if (runs.length > 0 && runs.every((r) => r.status !== 'running')) break;
      if (i > 1200) throw new Error(`the fire time never ran to its end: ${JSON.stringify(runs)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    // The only fire time is behind and claimed: a second run of it would have started with the first.
    const runs = (
      await httpB.get('/api/v1/tap/runs').query({ name: 'once' }).set('x-api-key', boot).expect(200)
    ).body as Run[];
    expect(runs.map((r) => [r.trigger, r.status])).toEqual([['schedule', 'success']]);
  }, 180_000);
});
