import { Registry } from 'prom-client';
import { createLogger, loadConfig } from '@tapyard/core';
import { AiAnswerError, AiCancelledError, AiService, ChatEvent } from '@tapyard/ai';
import { SecretNotFoundError, SecretsService } from '@tapyard/secrets';
import { testEnv } from './support/env';
import { LogCapture } from './support/log-capture';
import { ModelDouble } from './support/model-double';

/**
 * The provider layer through the official `openai` and `@anthropic-ai/sdk` clients against a loopback
 * double of their wire protocols. The secret store is replaced by a map: secrets have their own suite.
 */
describe('AI providers: official clients against the OpenAI and Anthropic wire protocols', () => {
  const double = new ModelDouble();
  const KEY = 'sk-test-VERY-SECRET-1234567890';
  let secrets: Map<string, Record<string, string>>;
  let ai: AiService;
  let registry: Registry;
  let logs: LogCapture;

  const make = (allow: string | undefined): AiService => {
    const config = loadConfig(testEnv({ TAP_EGRESS_ALLOW: allow }));
    logs = new LogCapture();
    registry = new Registry();
    const store = {
      reveal: async (_env: string, name: string) => {
        const s = secrets.get(name);
        if (!s) throw new SecretNotFoundError(name);
        return s;
      },
    } as unknown as SecretsService;
    return new AiService(config, createLogger('info', 'api', logs), store, registry);
  };
  const useOpenAi = (extra: Record<string, string> = {}): void => {
    secrets.set('ai', {
      provider: 'openai-compatible',
      baseUrl: double.openaiUrl,
      apiKey: KEY,
      model: 'm-main',
      ...extra,
    });
  };
  const useAnthropic = (extra: Record<string, string> = {}): void => {
    secrets.set('ai', {
      provider: 'anthropic',
      baseUrl: double.anthropicUrl,
      apiKey: KEY,
      model: 'claude-x',
      ...extra,
    });
  };

  beforeAll(async () => {
    await double.start();
  });
  afterAll(() => double.stop());
  beforeEach(() => {
    double.reset();
    secrets = new Map();
    ai = make(double.address);
  });

  it('answers 503 naming the secret when no provider is configured', async () => {
    await expect(ai.model('env1', 'tapAuthoring')).rejects.toMatchObject({
      status: 503,
      message: expect.stringContaining("secret 'ai'"),
    });
    expect(await ai.status('env1', 1000)).toMatchObject({ status: 'not_configured' });
  });

  it('OpenAI-compatible: text completion with the key as bearer, the feature model, usage metrics', async () => {
    useOpenAi({ 'model.cron': 'm-cron' });
    double.script({ text: 'hello there' });
    const model = await ai.model('env1', 'cron');
    const res = await model.complete({ system: 'be brief', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.text).toBe('hello there');
    expect(double.calls[0].headers.authorization).toBe(`Bearer ${KEY}`);
    expect(double.calls[0].body).toMatchObject({ model: 'm-cron', max_tokens: 4096 });
    const metrics = await registry.metrics();
    expect(metrics).toMatch(/tapyard_ai_tokens_total\{feature="cron",model="m-cron",kind="output"\} [1-9]/);
    expect(metrics).toMatch(
      /tapyard_ai_request_duration_seconds_count\{feature="cron",model="m-cron",outcome="ok"\} 1/,
    );
    expect(logs.text).not.toContain('hello there');
    expect(logs.text).not.toContain('be brief');
    expect(logs.text).not.toContain(KEY);
    expect(await ai.status('env1', 2000)).toMatchObject({ status: 'up' });
  });

  it('structured answers: asks for json_schema, accepts a fenced block, retries once, then 502 naming the provider', async () => {
    useOpenAi();
    const schema = { type: 'object', required: ['n'], properties: { n: { type: 'integer' } } };
    double.script({ text: 'Sure!\n```json\n{"n": 4}\n```' });
    const model = await ai.model('env1', 'tapAuthoring');
    await expect(
      model.json({ name: 'answer', schema, system: 's', messages: [{ role: 'user', content: 'q' }] }),
    ).resolves.toEqual({ n: 4 });
    expect(double.calls[0].body.response_format).toMatchObject({
      type: 'json_schema',
      json_schema: { name: 'answer', schema },
    });

    double.reset();
    double.script({ text: 'no json here' }, { json: { n: 'four' } });
    const err = await model
      .json({ name: 'answer', schema, system: 's', messages: [{ role: 'user', content: 'q' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AiAnswerError);
    expect((err as AiAnswerError).status).toBe(502);
    expect((err as Error).message).toContain(`openai-compatible at http://${double.address}`);
    expect(double.calls).toHaveLength(2);
    // The retry tells the model what was wrong.
    expect(ModelDouble.promptText(double.calls[1])).toContain('not one JSON object');
  });

  it('retries 429 honouring Retry-After, then answers', async () => {
    useOpenAi();
    double.script({ status: 429, retryAfter: '1' }, { text: 'ok after wait' });
    const model = await ai.model('env1', 'answer');
    const res = await model.complete({ system: 's', messages: [{ role: 'user', content: 'q' }] });
    expect(res.text).toBe('ok after wait');
    expect(double.calls).toHaveLength(2);
    expect(double.calls[1].at - double.calls[0].at).toBeGreaterThanOrEqual(900);
  });

  it('a refused key is a 502 that does not carry the key; exhausted 5xx is 503', async () => {
    useOpenAi({ maxRetries: '0' });
    double.script({ status: 401, message: `Incorrect API key provided: ${KEY}` });
    const model = await ai.model('env1', 'answer');
    const err = (await model
      .complete({ system: 's', messages: [{ role: 'user', content: 'q' }] })
      .catch((e: unknown) => e)) as Error & { status: number };
    expect(err.status).toBe(502);
    expect(err.message).not.toContain(KEY);
    double.script({ status: 500, message: `boom ${KEY}` });
    const err2 = (await model
      .complete({ system: 's', messages: [{ role: 'user', content: 'q' }] })
      .catch((e: unknown) => e)) as Error & { status: number };
    expect(err2.status).toBe(503);
    expect(err2.message).not.toContain(KEY);
  });

  it('a token budget: an over-long prompt is refused before anything is sent', async () => {
    useOpenAi({ maxInputTokens: '1000' });
    const model = await ai.model('env1', 'answer');
    await expect(
      model.complete({ system: 's', messages: [{ role: 'user', content: 'x'.repeat(10_000) }] }),
    ).rejects.toMatchObject({ status: 413 });
    expect(double.calls).toHaveLength(0);
  });

  it('a provider on a loopback address the operator did not allow is refused (503 naming TAP_EGRESS_ALLOW)', async () => {
    ai = make(undefined);
    useOpenAi();
    double.script({ text: 'never' });
    const model = await ai.model('env1', 'answer');
    await expect(
      model.complete({ system: 's', messages: [{ role: 'user', content: 'q' }] }),
    ).rejects.toMatchObject({
      status: 503,
      message: expect.stringContaining('TAP_EGRESS_ALLOW'),
    });
    expect(double.calls).toHaveLength(0);
  });

  it('OpenAI streaming: text deltas and two tool calls assembled from pieces', async () => {
    useOpenAi();
    double.script({
      text: 'Looking now.',
      toolCalls: [
        { name: 'list_pipelines', arguments: {} },
        { name: 'get_tap', arguments: { name: 'orders' } },
      ],
    });
    const model = await ai.model('env1', 'assistant');
    const events: ChatEvent[] = [];
    for await (const ev of model.stream({
      system: 's',
      messages: [{ role: 'user', content: 'q' }],
      tools: [
        { name: 'list_pipelines', description: 'd', parameters: { type: 'object', properties: {} } },
        {
          name: 'get_tap',
          description: 'd',
          parameters: { type: 'object', properties: { name: { type: 'string' } } },
        },
      ],
    }))
      events.push(ev);
    const deltas = events.filter((e) => e.type === 'text');
    expect(deltas.length).toBeGreaterThan(1);
    const done = events[events.length - 1];
    expect(done.type).toBe('done');
    if (done.type !== 'done') return;
    expect(done.result.text).toBe('Looking now.');
    expect(done.result.stopReason).toBe('tool_calls');
    expect(done.result.toolCalls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
      ['list_pipelines', {}],
      ['get_tap', { name: 'orders' }],
    ]);
    expect(double.calls[0].body.stream).toBe(true);
    expect(double.calls[0].body.tools).toHaveLength(2);
  });

  it('Anthropic: a structured answer as a forced tool call, text, and streaming tool calls', async () => {
    useAnthropic();
    const schema = { type: 'object', required: ['cron'], properties: { cron: { type: 'string' } } };
    double.script(
      { json: { cron: '0 0 7 * * ?' } },
      { text: 'plain' },
      { text: 'Checking.', toolCalls: [{ name: 'get_tap', arguments: { name: 'a' } }] },
    );
    const model = await ai.model('env1', 'cron');
    await expect(
      model.json({ name: 'schedule', schema, system: 'sys', messages: [{ role: 'user', content: 'q' }] }),
    ).resolves.toEqual({ cron: '0 0 7 * * ?' });
    // The client sends the key as x-api-key or, in recent versions, as a bearer token.
    const h = double.calls[0].headers;
    expect([h['x-api-key'], h.authorization]).toContainEqual(expect.stringContaining(KEY));
    expect(h['anthropic-version']).toBeTruthy();
    expect(double.calls[0].body).toMatchObject({
      model: 'claude-x',
      system: 'sys',
      tool_choice: { type: 'tool', name: 'schedule' },
    });
    const text = await model.complete({ system: 's', messages: [{ role: 'user', content: 'q' }] });
    expect(text.text).toBe('plain');
    const events: ChatEvent[] = [];
    for await (const ev of model.stream({
      system: 's',
      messages: [{ role: 'user', content: 'q' }],
      tools: [{ name: 'get_tap', description: 'd', parameters: { type: 'object', properties: {} } }],
    }))
      events.push(ev);
    const done = events[events.length - 1];
    if (done.type !== 'done') throw new Error('no done event');
    expect(
      events
        .filter((e) => e.type === 'text')
        .map((e) => (e.type === 'text' ? e.delta : ''))
        .join(''),
    ).toBe('Checking.');
    expect(done.result.toolCalls).toEqual([
      { id: expect.stringMatching(/^toolu_/), name: 'get_tap', arguments: '{"name":"a"}' },
    ]);
    expect(done.result.usage.input).toBeGreaterThan(0);
  });

  it('cancellation: aborting the signal aborts the HTTP call; the provider sees the request end', async () => {
    useOpenAi();
    double.script({ hang: true });
    const model = await ai.model('env1', 'assistant');
    const abort = new AbortController();
    const pending = model
      .complete({ system: 's', messages: [{ role: 'user', content: 'q' }], signal: abort.signal })
      .catch((e: unknown) => e);
    while (double.calls.length === 0) await new Promise((r) => setTimeout(r, 20));
    abort.abort();
    await double.waitForEarlyClose();
    expect(await pending).toBeInstanceOf(AiCancelledError);
    expect(await registry.metrics()).toMatch(/outcome="cancelled"\} 1/);
  });
});
