import { TestApi, startApi } from './support/apps';
import { TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { TestMinio } from './support/minio';
import { ModelDouble } from './support/model-double';
import { issueKey, newBootstrapKey } from './support/auth';

/**
 * AI-assisted tap authoring end to end: the real API (two instances sharing Postgres), real MinIO for
 * script versions, the real sandbox for tests, and a loopback double of the OpenAI wire protocol for
 * the model, driven through the official client. Asserts on what we send as well as what we do.
 */

const good = (body: string, extra = ''): string => `import os
${extra}
def fetch():
    limit = int(os.environ.get("SERVICE_TAP_TEST_LIMIT", "0") or 0)
    n = limit if limit > 0 else 5
${body}
`;
const ROWS = good(`    for i in range(n):
        yield {"id": i, "name": f"row{i}"}`);
const WARNING_ROWS = good(`    print("WARNING: the API ignored page_size, fetching one row per call")
    for i in range(n):
        yield {"id": i, "name": f"row{i}"}`);

describe('tap authoring with a model provider (OpenAI wire double, real sandbox, MinIO)', () => {
  const env = uniqueEnvironment('author');
  const double = new ModelDouble();
  const minio = new TestMinio();
  let api: TestApi;
  let api2: TestApi;
  const SECRET_VALUE = 'ghp_S3cretValueNobodyMaySee_42';

  const post = (path: string, body: unknown) => api.http.post(`/api/v1${path}`).send(body as object);
  const prompts = (): string[] => double.calls.map((c) => ModelDouble.promptText(c));

  beforeAll(async () => {
    await double.start();
    // A loaded machine can take more than the default 2 s to read the 'ai' secret and reach the double.
    const flags = {
      TAPYARD_ENV: env,
      ...TEST_OBJECT_STORE,
      TAP_EGRESS_ALLOW: double.address,
      HEALTH_TIMEOUT_MS: '10000',
    };
    api = await startApi(flags);
    api2 = await startApi(flags);
    await api.http
      .post('/api/v1/pipeline')
      .send({
        name: 'rows',
        source: {
          fileAttributes: { format: 'csv' },
          schemaProperties: { fields: [{ name: 'id', type: 'int' }] },
        },
        destination: { database: { schema: 'public', table: `rows_${env.replace(/[^a-z0-9]/g, '_')}` } },
      })
      .expect(200);
  }, 60000);
  afterAll(async () => {
    await api2.close();
    await api.close();
    await double.stop();
  });
  beforeEach(() => double.reset());

  describe('without a provider', () => {
    it('AI endpoints answer 503 naming the secret; deterministic features keep working', async () => {
      for (const [path, body] of [
        ['/tap/brainstorm', { messages: [{ role: 'user', content: 'GitHub issues' }] }],
        ['/tap/generate', { tapName: 'gh', description: 'GitHub issues' }],
        ['/tap/fix', { tapName: 'gh', script: ROWS, error: 'boom' }],
        ['/tap/optimize', { tapName: 'gh', script: ROWS, recordCount: 5, durationMs: 10 }],
        ['/tap/review', { tapName: 'gh', script: ROWS, recordCount: 0, durationMs: 10, logs: '' }],
      ] as const) {
        const res = await post(path, body).expect(503);
        expect(res.body.message).toContain("secret 'ai'");
      }
      // Review without a signal needs no model: nothing changes.
      const calm = await post('/tap/review', {
        tapName: 'gh',
        script: ROWS,
        recordCount: 5,
        durationMs: 10,
        logs: 'fetched 5 rows',
        oldScriptPath: 'tap-scripts/gh_v1.py',
      }).expect(200);
      expect(calm.body).toEqual({
        script: ROWS,
        packages: [],
        scriptPath: 'tap-scripts/gh_v1.py',
        changes: [],
        rewritten: false,
      });

      const cron = await post('/tap/cron', { description: 'every weekday at 7am' }).expect(200);
      expect(cron.body.cronExpression).toBe('0 0 7 ? * MON-FRI');
      const unknown = await post('/tap/cron', { description: 'whenever the moon is full' }).expect(422);
      expect(unknown.body.message).toContain('without a model provider');

      const failed = await post('/tap/test', {
        name: 'gh',
        script: 'def fetch():\n    raise RuntimeError("nope")\n',
      }).expect(200);
      expect(failed.body.error).toContain('nope');
      expect(failed.body.aiExplanation).toBeNull();
      const health = await api.http.get('/api/v1/health/services').expect(200);
      expect(health.body.ai).toEqual({ status: 'not_configured' });
      expect(double.calls).toHaveLength(0);
    });
  });

  describe('with a provider', () => {
    beforeAll(async () => {
      await api.http
        .put('/api/v1/secrets/ai')
        .send({
          provider: 'openai-compatible',
          baseUrl: double.openaiUrl,
          apiKey: 'sk-double',
          model: 'author-1',
          'model.cron': 'cron-1',
        })
        .expect(200);
      await api.http
        .put('/api/v1/secrets/gh')
        .send({ GITHUB_TOKEN: SECRET_VALUE, GITHUB_ORG: 'acme' })
        .expect(200);
    });

    it('reports the provider in /health/services', async () => {
      const health = await api.http.get('/api/v1/health/services').expect(200);
      expect(health.body.ai).toEqual({
        status: 'up',
        message: `openai-compatible at http://${double.address}, model author-1`,
      });
    });

    it('brainstorm: never suggests the injected variables (enforced in code)', async () => {
      double.script({
        json: {
          reply: 'Which repositories?',
          description: 'Open GitHub issues of the acme org',
          suggestedEnvVars: [
            'GITHUB_TOKEN',
            'SERVICE_POSTGRES_DATABASE',
            'service_platform_host',
            'SERVICE_MONGODB_DATABASE',
            'SERVICE_PLATFORM_PORT',
            'GITHUB_ORG',
            'not a name',
          ],
        },
      });
      const res = await post('/tap/brainstorm', {
        messages: [{ role: 'user', content: 'I need our open GitHub issues' }],
        currentDescription: 'issues',
      }).expect(200);
      expect(res.body).toEqual({
        reply: 'Which repositories?',
        description: 'Open GitHub issues of the acme org',
        suggestedEnvVars: ['GITHUB_TOKEN', 'GITHUB_ORG'],
      });
      expect(prompts()[0]).toContain('I need our open GitHub issues');
      expect(double.calls[0].body.model).toBe('author-1');
    });

    it('brainstorm for a document tap asks about the source only: an answer about chunking is sent back', async () => {
      double.script(
        {
          json: {
            reply: 'What chunk size and which embedding model?',
            description: 'docs',
            suggestedEnvVars: [],
          },
        },
        {
          json: {
            reply: 'Which SharePoint site holds the documents?',
            description: 'SharePoint documents',
            suggestedEnvVars: ['SP_SITE'],
          },
        },
      );
      const res = await post('/tap/brainstorm', {
        messages: [{ role: 'user', content: 'our policy PDFs' }],
        tapType: 'document',
      }).expect(200);
      expect(res.body.reply).toBe('Which SharePoint site holds the documents?');
      expect(double.calls).toHaveLength(2);
      expect(prompts()[0]).toMatch(/Never ask about chunking, embedding, models or vector stores/);
      expect(prompts()[1]).toContain('mentions chunking, embedding or vector stores');
    });

    it('prompt fragments: CRUD, whole-word matching, injection, and a cache that sees writes from the other instance', async () => {
      await api.http
        .put('/api/v1/tap/prompt-fragments/salesforce')
        .send({ aliases: ['sfdc', 'sales cloud'], content: 'Use REST API v59.0.' })
        .expect(200, { status: 'ok' });
      await api.http.put('/api/v1/tap/prompt-fragments/api').send({ content: 'Always page.' }).expect(200);
      const first = (await api2.http.get('/api/v1/tap/prompt-fragments/salesforce').expect(200)).body;
      expect(first).toMatchObject({
        key: 'salesforce',
        aliases: ['sfdc', 'sales cloud'],
        content: 'Use REST API v59.0.',
      });

      // On the second instance: "SFDC" matches the alias (case-insensitive); "rapid" does not match "api".
      double.script({ json: { script: ROWS, packages: [] } });
      const gen = await api2.http
        .post('/api/v1/tap/generate')
        .send({ tapName: 'accounts', description: 'Load SFDC accounts, rapid please' })
        .expect(200);
      expect(gen.body.injectedPrompts).toEqual(['salesforce']);
      expect(prompts()[0]).toContain('Use REST API v59.0.');
      expect(prompts()[0]).not.toContain('Always page.');

      // Updated on the first instance: the very next request on the second sees it.
      await new Promise((r) => setTimeout(r, 10));
      await api.http
        .put('/api/v1/tap/prompt-fragments/salesforce')
        .send({ aliases: ['sfdc'], content: 'Use Bulk API 2.0.' })
        .expect(200);
      const second = (await api2.http.get('/api/v1/tap/prompt-fragments/salesforce').expect(200)).body;
      expect(second.createdAt).toBe(first.createdAt);
      expect(Date.parse(second.updatedAt)).toBeGreaterThan(Date.parse(first.updatedAt));
      double.script({ json: { script: ROWS, packages: [] } });
      await api2.http
        .post('/api/v1/tap/generate')
        .send({ tapName: 'accounts', description: 'sfdc accounts via the API' })
        .expect(200);
      expect(prompts()[1]).toContain('Use Bulk API 2.0.');
      expect(prompts()[1]).toContain('Always page.');

      const list = (await api2.http.get('/api/v1/tap/prompt-fragments').expect(200)).body as {
        key: string;
      }[];
      expect(list.map((f) => f.key)).toEqual(['api', 'salesforce']);
      await api.http.delete('/api/v1/tap/prompt-fragments/api').expect(200, { status: 'ok' });
      await api2.http.get('/api/v1/tap/prompt-fragments/api').expect(404);
      await api2.http.delete('/api/v1/tap/prompt-fragments/api').expect(404);
      double.script({ json: { script: ROWS, packages: [] } });
      const third = await api2.http
        .post('/api/v1/tap/generate')
        .send({ tapName: 'accounts', description: 'the API' })
        .expect(200);
      expect(third.body.injectedPrompts).toEqual([]);
    });

    it('suggest refines existing content (text/plain) and writes a first version when there is none', async () => {
      double.script({ text: 'Use Bulk API 2.0.\nPage with nextRecordsUrl.' });
      const res = await post('/tap/prompt-fragments/suggest', {
        key: 'salesforce',
        aliases: ['sfdc'],
        content: 'Use Bulk API 2.0.',
      }).expect(200);
      expect(res.headers['content-type']).toMatch(/^text\/plain/);
      expect(res.text).toBe('Use Bulk API 2.0.\nPage with nextRecordsUrl.');
      expect(prompts()[0]).toContain('Refine the existing fragment');
      expect(prompts()[0]).toContain('Existing fragment:\nUse Bulk API 2.0.');
    });

    it('generate: a script that inlines the secret is sent back with the reasons (never the value), then stored', async () => {
      const inlined = good(`    token = "${SECRET_VALUE}"
    for i in range(n):
        yield {"id": i}`);
      const fixed = good(
        `    token = os.environ["GITHUB_TOKEN"]
    for i in range(n):
        yield {"id": i}`,
        'import requests',
      );
      double.script(
        { json: { script: inlined, packages: [] } },
        { json: { script: fixed, packages: ['requests==2.32.3'] } },
      );
      const res = await post('/tap/generate', {
        tapName: 'issues',
        description: 'GitHub issues',
        secretName: 'gh',
      }).expect(200);
      expect(res.body).toMatchObject({ script: fixed, packages: ['requests==2.32.3'], injectedPrompts: [] });
      expect(res.body.scriptPath).toMatch(/^tap-scripts\/issues_[A-Za-z0-9-]+\.py$/);
      expect((await minio.read(`${env}-taps`, res.body.scriptPath)).toString('utf8')).toBe(fixed);
      // The model is told the field names, and on retry what was wrong; never the value.
      expect(prompts()[0]).toContain('GITHUB_TOKEN, GITHUB_ORG');
      expect(prompts()[1]).toContain("contains the value of secret field 'GITHUB_TOKEN' inline");
      for (const p of prompts().slice(0, 1)) expect(p).not.toContain(SECRET_VALUE);
      expect(JSON.stringify((double.calls[1].body.messages as unknown[])[0])).not.toContain(SECRET_VALUE);
      expect(JSON.stringify(res.body)).not.toContain('S3cretValue');
    });

    it('generate: refuses with 422 listing the problems when the second answer fails the checks too', async () => {
      const noFetch = 'import os\nimport pandas\nx = os.environ.get("SERVICE_TAP_TEST_LIMIT")\n';
      double.script(
        { json: { script: noFetch, packages: [] } },
        { json: { script: 'def fetch(:\n', packages: [] } },
      );
      const res = await post('/tap/generate', { tapName: 'broken', description: 'anything' }).expect(422);
      expect(prompts()[1]).toContain('does not define a top-level fetch() function');
      expect(prompts()[1]).toContain(
        'imports pandas, which is neither in the standard library nor among the declared packages',
      );
      expect(res.body.message).toContain('does not parse as Python 3');
      expect(res.body.details[0]).toMatchObject({ field: 'script' });
    });

    it('generate for a document tap: document rules in the prompt; an embedding import is refused', async () => {
      const embeds = good(
        `    yield {"uri": "u", "filename": "f", "content": "c"}`,
        'import sentence_transformers',
      );
      const docs = good(`    yield {"uri": "https://x/a.pdf", "filename": "a.pdf", "content": "QQ=="}`);
      double.script(
        { json: { script: embeds, packages: ['sentence-transformers'] } },
        { json: { script: docs, packages: [] } },
      );
      const res = await post('/tap/generate', {
        tapName: 'policies',
        description: 'policy PDFs from the intranet',
        tapType: 'document',
      }).expect(200);
      expect(res.body.script).toBe(docs);
      expect(prompts()[0]).toContain('never chunks, embeds, or writes to a vector store');
      expect(prompts()[0]).toContain('never\nfalls back to reading the local filesystem');
      expect(prompts()[1]).toContain(
        'a document tap only fetches documents; it imports sentence_transformers',
      );
    });

    it('fix: sends the error and the end of the logs; stores a new version; a foreign oldScriptPath is 400', async () => {
      double.script({ json: { script: ROWS, packages: [] } });
      const logs = `${'noise\n'.repeat(50_000)}KeyError: 'items' at the end`;
      const res = await post('/tap/fix', {
        tapName: 'issues',
        script: 'def fetch():\n  return r["items"]\n',
        error: "KeyError: 'items'",
        logs,
        diagnosis: 'the field is called data',
      }).expect(200);
      expect(res.body.script).toBe(ROWS);
      expect(prompts()[0]).toContain("KeyError: 'items' at the end");
      expect(prompts()[0]).toContain('the field is called data');
      await post('/tap/fix', {
        tapName: 'issues',
        script: ROWS,
        oldScriptPath: 'tap-scripts/other_1.py',
      }).expect(400);
    });

    it("aiExplanation: a failing test and an empty run get the model's diagnosis from error, logs and script", async () => {
      double.script({ json: { explanation: 'The script raises on purpose: remove the raise.' } });
      const failed = await post('/tap/test', {
        name: 'expl',
        script: 'def fetch():\n    print("about to fail")\n    raise RuntimeError("deliberate")\n',
      }).expect(200);
      expect(failed.body.aiExplanation).toBe('The script raises on purpose: remove the raise.');
      expect(prompts()[0]).toContain('deliberate');
      expect(prompts()[0]).toContain('about to fail');
      double.script({ json: { explanation: 'Nothing matched the filter.' } });
      const empty = await post('/tap/test', { name: 'expl', script: 'def fetch():\n    return []\n' }).expect(
        200,
      );
      expect(empty.body).toMatchObject({ recordCount: 0, aiExplanation: 'Nothing matched the filter.' });
      const ok = await post('/tap/test', { name: 'expl', script: ROWS }).expect(200);
      expect(ok.body.aiExplanation).toBeNull();
      expect(double.calls).toHaveLength(2);
      // A provider that fails never fails the test result.
      double.script({ status: 400, message: 'bad' });
      const still = await post('/tap/test', { name: 'expl', script: 'def fetch():\n    return []\n' }).expect(
        200,
      );
      expect(still.body.aiExplanation).toBeNull();
    });

    it('cron: unknown phrasing goes to the model; only a valid Quartz answer is accepted', async () => {
      double.script(
        { json: { cronExpression: '0 0 5 * * MON-FRI', explanation: 'x' } },
        { json: { cronExpression: '0 0 5 ? * MON-FRI', explanation: 'x' } },
      );
      const res = await post('/tap/cron', {
        description: 'at the crack of dawn on workdays',
        timezone: 'Europe/Berlin',
      }).expect(200);
      expect(res.body.cronExpression).toBe('0 0 5 ? * MON-FRI');
      expect(res.body.nextRuns).toHaveLength(5);
      expect(double.calls[0].body.model).toBe('cron-1');
      expect(prompts()[1]).toContain('not a usable Quartz expression');
      double.script(
        { json: { cronExpression: 'every dawn', explanation: 'x' } },
        { json: { cronExpression: '61 * * * * ?', explanation: 'x' } },
      );
      const bad = await post('/tap/cron', { description: 'at the crack of dawn' }).expect(422);
      expect(bad.body.message).toContain('not valid Quartz');
      // The deterministic parser still answers first, without a model call.
      double.reset();
      await post('/tap/cron', { description: 'every 15 minutes' }).expect(200);
      expect(double.calls).toHaveLength(0);
    });

    it('brainstorm → generate → test → review (signal) → re-test → optimise, against the real sandbox (spec rule 5)', async () => {
      double.script({ json: { reply: 'Done?', description: 'Five demo rows', suggestedEnvVars: [] } });
      const idea = await post('/tap/brainstorm', {
        messages: [{ role: 'user', content: 'five demo rows' }],
      }).expect(200);
      double.script({ json: { script: WARNING_ROWS, packages: [] } });
      const gen = await post('/tap/generate', { tapName: 'demo', description: idea.body.description }).expect(
        200,
      );
      await post('/tap', { name: 'demo', scriptPath: gen.body.scriptPath, targetPipeline: 'rows' }).expect(
        200,
      );

      const t1 = await api.http.post('/api/v1/tap/test?testLimit=3').send({ name: 'demo' }).expect(200);
      expect(t1.body.recordCount).toBe(3);
      expect(t1.body.logs).toContain('WARNING');

      double.script({
        json: {
          script: ROWS,
          packages: [],
          changes: ['Request 100 rows per page instead of relying on the ignored page_size'],
        },
      });
      const review = await post('/tap/review', {
        tapName: 'demo',
        script: WARNING_ROWS,
        recordCount: 3,
        durationMs: t1.body.durationMs,
        logs: t1.body.logs,
        oldScriptPath: gen.body.scriptPath,
      }).expect(200);
      expect(review.body).toMatchObject({ rewritten: true, script: ROWS, changes: [expect.any(String)] });
      expect(review.body.scriptPath).not.toBe(gen.body.scriptPath);
      expect(prompts().pop()).toContain('WARNING: the API ignored page_size');
      // The old version is kept for rollback.
      expect((await minio.read(`${env}-taps`, gen.body.scriptPath)).toString('utf8')).toBe(WARNING_ROWS);

      // Re-test the rewrite: no signal now, so review changes nothing and asks nobody.
      await post('/tap', { name: 'demo', scriptPath: review.body.scriptPath }).expect(200);
      const t2 = await api.http.post('/api/v1/tap/test?testLimit=3').send({ name: 'demo' }).expect(200);
      expect(t2.body).toMatchObject({ recordCount: 3, error: null });
      const calls = double.calls.length;
      const calm = await post('/tap/review', {
        tapName: 'demo',
        script: ROWS,
        recordCount: 3,
        durationMs: t2.body.durationMs,
        logs: t2.body.logs,
        oldScriptPath: review.body.scriptPath,
      }).expect(200);
      expect(calm.body).toMatchObject({
        rewritten: false,
        changes: [],
        script: ROWS,
        scriptPath: review.body.scriptPath,
      });
      expect(double.calls.length).toBe(calls);

      // Optimise with nothing to change: the input comes back, no new version.
      double.script({ json: { script: ROWS, packages: [], changes: [] } });
      const same = await post('/tap/optimize', {
        tapName: 'demo',
        script: ROWS,
        recordCount: 3,
        durationMs: t2.body.durationMs,
        logs: '',
        oldScriptPath: review.body.scriptPath,
      }).expect(200);
      expect(same.body).toEqual({
        script: ROWS,
        packages: [],
        scriptPath: review.body.scriptPath,
        changes: [],
      });
    });

    it('optimise: a rewrite that drops the test limit, secret reads, retries or raise_for_status is refused (syntax trees compared)', async () => {
      const original = `import os, time, requests
def fetch():
    limit = int(os.environ.get("SERVICE_TAP_TEST_LIMIT", "0") or 0)
    token = os.environ["GITHUB_TOKEN"]
    for attempt in range(5):
        r = requests.get("https://api.github.com/issues", headers={"Authorization": token}, timeout=10)
        if r.status_code == 429:
            time.sleep(2 ** attempt)
            continue
        r.raise_for_status()
        break
    for i, row in enumerate(r.json()):
        if limit and i >= limit:
            break
        yield row
`;
      const stripped = `import os, requests
def fetch():
    r = requests.get("https://api.github.com/issues", headers={"Authorization": os.environ["GITHUB_TOKEN"]})
    yield from r.json()
`;
      const newSignature = original.replace('def fetch():', 'def fetch(page):');
      double.script(
        { json: { script: stripped, packages: ['requests'], changes: ['simpler'] } },
        { json: { script: newSignature, packages: ['requests'], changes: ['paged'] } },
      );
      await post('/tap', { name: 'gh_issues', secretName: 'gh', packages: ['requests'] }).expect(200);
      const res = await post('/tap/optimize', {
        tapName: 'gh_issues',
        script: original,
        recordCount: 10,
        durationMs: 900,
      }).expect(422);
      const sent = prompts()[1];
      expect(sent).toContain('it dropped the SERVICE_TAP_TEST_LIMIT handling');
      expect(sent).toContain('it removed the retry/back-off handling');
      expect(sent).toContain('it removed the status-raising calls');
      expect(res.body.message).toContain('it changed the fetch() signature');
    });

    it('optimise with verify: both versions re-tested; a rewrite 20 % slower is reverted, with both durations', async () => {
      const slow = good(`    import time
    for i in range(n):
        time.sleep(0.4)
        yield {"id": i, "name": f"row{i}"}`);
      double.script({ json: { script: slow, packages: [], changes: ['fewer allocations'] } });
      const res = await post('/tap/optimize', {
        tapName: 'demo',
        script: ROWS,
        recordCount: 3,
        durationMs: 50,
        verify: true,
        testLimit: 3,
      }).expect(200);
      expect(res.body.script).toBe(ROWS);
      expect(res.body.changes).toEqual([]);
      expect(res.body.verification).toMatchObject({
        kept: 'original',
        reason: expect.stringContaining('slower'),
      });
      expect(res.body.verification.optimizedMs).toBeGreaterThan(res.body.verification.originalMs * 1.2);

      const fast = good(`    yield from ({"id": i, "name": f"row{i}"} for i in range(n))`);
      double.script({ json: { script: fast, packages: [], changes: ['a generator expression'] } });
      const kept = await post('/tap/optimize', {
        tapName: 'demo',
        script: slow,
        recordCount: 3,
        durationMs: 1300,
        verify: true,
        testLimit: 3,
      }).expect(200);
      expect(kept.body).toMatchObject({ script: fast, verification: { kept: 'optimized' } });
      expect(kept.body.scriptPath).toMatch(/^tap-scripts\/demo_/);
    });

    it('the same flow through Anthropic: the script comes back as a forced tool call of the Messages API', async () => {
      await api.http
        .put('/api/v1/secrets/ai')
        .send({
          provider: 'anthropic',
          baseUrl: double.anthropicUrl,
          apiKey: 'sk-ant-double',
          model: 'claude-double',
        })
        .expect(200);
      try {
        double.script({ json: { script: ROWS, packages: [] } });
        const res = await post('/tap/generate', { tapName: 'via_claude', description: 'five rows' }).expect(
          200,
        );
        expect(res.body.script).toBe(ROWS);
        expect(double.calls[0]).toMatchObject({
          protocol: 'anthropic',
          body: { model: 'claude-double', tool_choice: { type: 'tool', name: 'tap_script' } },
        });
        expect(String(double.calls[0].body.system)).toContain('SERVICE_TAP_TEST_LIMIT');
      } finally {
        await api.http
          .put('/api/v1/secrets/ai')
          .send({
            provider: 'openai-compatible',
            baseUrl: double.openaiUrl,
            apiKey: 'sk-double',
            model: 'author-1',
          })
          .expect(200);
      }
    });

    it('cancellation: a client that goes away aborts the model call (the provider sees the request end)', async () => {
      double.script({ hang: true });
      const server = api.app.getHttpServer();
      if (!server.listening) await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const port = (server.address() as { port: number }).port;
      const abort = new AbortController();
      const pending = fetch(`http://127.0.0.1:${port}/api/v1/tap/generate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ tapName: 'slow', description: 'anything' }),
        signal: abort.signal,
      }).catch((e: unknown) => e);
      while (double.calls.length === 0) await new Promise((r) => setTimeout(r, 20));
      abort.abort();
      await double.waitForEarlyClose();
      expect(await pending).toMatchObject({ name: 'AbortError' });
      // The API keeps serving.
      await api.http.get('/api/v1/tap/prompt-fragments').expect(200);
    });
  });
});

describe('tap authoring capabilities', () => {
  const env = uniqueEnvironment('authcap');
  const admin = newBootstrapKey();
  const double = new ModelDouble();
  let api: TestApi;

  beforeAll(async () => {
    await double.start();
    api = await startApi({
      TAPYARD_ENV: env,
      ...TEST_OBJECT_STORE,
      TAP_EGRESS_ALLOW: double.address,
      USE_API_KEYS: 'true',
      TAPYARD_BOOTSTRAP_API_KEY: admin,
    });
    await api.http
      .put('/api/v1/secrets/ai')
      .set('x-api-key', admin)
      .send({ provider: 'openai', baseUrl: double.openaiUrl, apiKey: 'sk-x', model: 'm' })
      .expect(200);
  }, 60000);
  afterAll(async () => {
    await api.close();
    await double.stop();
  });

  it('a read-only key may read fragments, not brainstorm, generate, optimise or write fragments; a catalog-scoped key only its taps', async () => {
    const viewer = await issueKey(api.http, admin, 'viewer', { template: 'read-only' });
    await api.http.get('/api/v1/tap/prompt-fragments').set('x-api-key', viewer).expect(200);
    for (const [path, body] of [
      ['/tap/brainstorm', { messages: [{ role: 'user', content: 'x' }] }],
      ['/tap/generate', { tapName: 'a', description: 'x' }],
      ['/tap/fix', { tapName: 'a', script: 'x' }],
      ['/tap/review', { tapName: 'a', script: 'x', recordCount: 0, durationMs: 1 }],
      ['/tap/optimize', { tapName: 'a', script: 'x', recordCount: 0, durationMs: 1 }],
      ['/tap/prompt-fragments/suggest', { key: 'k', aliases: [] }],
    ] as const) {
      await api.http.post(`/api/v1${path}`).set('x-api-key', viewer).send(body).expect(403);
    }
    await api.http
      .put('/api/v1/tap/prompt-fragments/k')
      .set('x-api-key', viewer)
      .send({ content: 'c' })
      .expect(403);
    expect(double.calls).toHaveLength(0);

    await api.http
      .post('/api/v1/tap')
      .set('x-api-key', admin)
      .send({ name: 'finance_tap', catalog: 'finance' })
      .expect(200);
    const eng = await issueKey(api.http, admin, 'eng', {
      capabilities: ['tap:read', 'tap:update:catalog=eng'],
    });
    await api.http
      .post('/api/v1/tap/generate')
      .set('x-api-key', eng)
      .send({ tapName: 'finance_tap', description: 'x' })
      .expect(404);
    // Fragments are environment-wide: a catalog-scoped key may not change them.
    await api.http
      .put('/api/v1/tap/prompt-fragments/k')
      .set('x-api-key', eng)
      .send({ content: 'c' })
      .expect(403);
    // Writing code for a secret needs secret:use, like saving a tap with one.
    await api.http
      .put('/api/v1/secrets/gh')
      .set('x-api-key', admin)
      .send({ TOKEN: 'value-1234' })
      .expect(200);
    const author = await issueKey(api.http, admin, 'author', { capabilities: ['tap:read', 'tap:update'] });
    const denied = await api.http
      .post('/api/v1/tap/generate')
      .set('x-api-key', author)
      .send({ tapName: 'a', description: 'x', secretName: 'gh' })
      .expect(403);
    expect(denied.body.message).toContain('secret:use');
    expect(double.calls).toHaveLength(0);
  });

  it('brainstorming and a schedule only the model reads need tap:update (they spend model calls); a known schedule tap:read', async () => {
    double.reset();
    const viewer = await issueKey(api.http, admin, 'cron-viewer', { template: 'read-only' });
    const author = await issueKey(api.http, admin, 'cron-author', {
      capabilities: ['tap:read', 'tap:update:catalog=eng'],
    });
    const as = (key: string, path: string, body: object) =>
      api.http.post(`/api/v1${path}`).set('x-api-key', key).send(body);
    const idea = { messages: [{ role: 'user', content: 'GitHub issues' }] };
    const odd = { description: 'whenever the moon is full' };

    const known = await as(viewer, '/tap/cron', { description: 'every weekday at 7am' }).expect(200);
    expect(known.body.cronExpression).toBe('0 0 7 ? * MON-FRI');
    const brainstorm = await as(viewer, '/tap/brainstorm', idea).expect(403);
    expect(brainstorm.body.message).toBe("'cron-viewer' lacks the capability tap:update for this request");
    const cron = await as(viewer, '/tap/cron', odd).expect(403);
    expect(cron.body.message).toBe(
      "'cron-viewer' lacks the capability tap:update to have the model read a schedule the platform does not know",
    );
    expect(double.calls).toHaveLength(0);

    // tap:update in any scope: neither names a tap.
    double.script({
      json: { reply: 'Which repository?', description: 'GitHub issues', suggestedEnvVars: [] },
    });
    await as(author, '/tap/brainstorm', idea).expect(200);
    double.script({ json: { cronExpression: '0 0 0 ? * SUN', explanation: 'weekly' } });
    const read = await as(author, '/tap/cron', odd).expect(200);
    expect(read.body.cronExpression).toBe('0 0 0 ? * SUN');
    expect(double.calls).toHaveLength(2);
  });
});
