import { Pool } from 'pg';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { callTool as callToolAs, chat as chatAs } from './support/assistant-chat';
import { issueKey, newBootstrapKey } from './support/auth';
import { TEST_DATABASE_URL, TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { ModelDouble } from './support/model-double';
import { closedPort } from './support/net';

interface OpenApiSchema {
  $ref?: string;
  properties?: Record<string, unknown>;
  allOf?: OpenApiSchema[];
}

interface OpenApiDoc {
  paths: Record<
    string,
    Record<string, { requestBody?: { content?: Record<string, { schema?: OpenApiSchema }> } }>
  >;
  components: { schemas: Record<string, OpenApiSchema> };
}

/** Every property a request body may carry, `$ref` and `allOf` followed. */
function bodyProperties(
  doc: OpenApiDoc,
  schema: OpenApiSchema | undefined,
  seen = new Set<string>(),
): string[] {
  if (!schema) return [];
  if (schema.$ref) {
    const name = schema.$ref.split('/').pop()!;
    if (seen.has(name)) return [];
    seen.add(name);
    return bodyProperties(doc, doc.components.schemas[name], seen);
  }
  return [
    ...Object.keys(schema.properties ?? {}),
    ...(schema.allOf ?? []).flatMap((s) => bodyProperties(doc, s, seen)),
  ];
}

/** `METHOD /path` (under /api/v1) of every operation whose body carries one of `props`. */
function operationsCarrying(doc: OpenApiDoc, props: string[]): string[] {
  const found: string[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const schemas = Object.values(op.requestBody?.content ?? {}).map((c) => c.schema);
      if (schemas.some((s) => bodyProperties(doc, s).some((p) => props.includes(p)))) {
        found.push(`${method.toUpperCase()} ${path.replace(/^\/api\/v1/, '')}`);
      }
    }
  }
  return found.sort();
}

/**
 * Issue 26 item 1: each authorization rule of taps and pipelines lives in one policy method, so it
 * holds through every entry point that reaches it: routes (found in the API's own OpenAPI document,
 * so a new route that takes the field is covered or this fails), assistant tools (the tool list the
 * model is given, each one classified) and the tap scheduler. Each refusal is made with the weakest
 * key that reaches the code. Real API and worker, PostgreSQL, MinIO and sandbox; the model is the
 * loopback wire double.
 */
describe('policy: every entry point obeys the same rule', () => {
  const env = uniqueEnvironment('policy');
  const schema = `po_${env.replace(/[^a-z0-9]/g, '_')}`.slice(0, 60);
  const admin = newBootstrapKey();
  const double = new ModelDouble();
  let api: TestApi;
  let worker: TestWorker;
  let pg: Pool;
  let base: string;
  let doc: OpenApiDoc;
  let toolNames: string[];
  let toolParameters: Record<string, unknown>;
  /** Everything a tap entry point asks for, but not pipeline:upload. */
  let noFeed: string;
  /** Everything a tap or pipeline entry point asks for, but not secret:use. */
  let noSecret: string;
  /** pipeline:upload on catalog a only, and what an upload through the assistant asks for. */
  let uploaderA: string;

  const script = 'def fetch():\n    return [{"n": 1}]\n';
  const csvPipeline = (name: string, catalog: string | null, destination: Record<string, unknown>) => ({
    name,
    catalog,
    source: { fileAttributes: { format: 'csv' }, schemaProperties: { fields: [{ name: 'n', type: 'int' }] } },
    destination,
  });
  const restWithSecret = { rest: { url: 'http://127.0.0.1:9/sink', secretName: 'vendor' } };

  const post = (key: string, path: string, body: unknown) =>
    api.http
      .post(`/api/v1${path}`)
      .set('x-api-key', key)
      .send(body as object);
  const get = (key: string, path: string, query: Record<string, string>) =>
    api.http.get(`/api/v1${path}`).query(query).set('x-api-key', key);

  const chat = (key: string, body: Record<string, unknown>) => chatAs(base, key, body);
  const callTool = (key: string, name: string, args: Record<string, unknown>) =>
    callToolAs(double, base, key, name, args);

  beforeAll(async () => {
    await double.start();
    const port = await closedPort();
    base = `http://127.0.0.1:${port}/api/v1`;
    const flags = {
      TAPYARD_ENV: env,
      ...TEST_OBJECT_STORE,
      TAP_EGRESS_ALLOW: double.address,
      TAP_SCHEDULER_MS: '100',
      USE_API_KEYS: 'true',
      TAPYARD_BOOTSTRAP_API_KEY: admin,
      PORT: String(port),
      HOST: '127.0.0.1',
    };
    api = await startApi(flags);
    await api.app.listen(port, '127.0.0.1');
    worker = await startWorker(flags);
    pg = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
    await pg.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await double.useAs(api.http, admin);
    await api.http.put('/api/v1/secrets/vendor').set('x-api-key', admin).send({ token: 't0ken' }).expect(200);
    await post(
      admin,
      '/pipeline',
      csvPipeline('target', 'b', { database: { schema, table: 'target' } }),
    ).expect(200);
    await post(admin, '/tap', { name: 'fed', targetPipeline: 'target', script }).expect(200);
    await post(admin, '/tap', { name: 'secretive', secretName: 'vendor', script }).expect(200);
    noFeed = await issueKey(api.http, admin, 'no-feed', {
      capabilities: ['tap:read', 'tap:run', 'tap:update', 'pipeline:read', 'assistant:run'],
    });
    noSecret = await issueKey(api.http, admin, 'no-secret', {
      capabilities: [
        'tap:read',
        'tap:run',
        'tap:update',
        'pipeline:read',
        'pipeline:update',
        'assistant:run',
      ],
    });
    uploaderA = await issueKey(api.http, admin, 'uploader-a', {
      capabilities: ['pipeline:read', 'pipeline:upload:catalog=a', 'assistant:run'],
    });
    doc = (await api.http.get('/api/docs-json').set('x-api-key', admin).expect(200)).body as OpenApiDoc;
    // The tools exactly as the model is offered them.
    double.script({ text: 'hello' });
    await chat(admin, { messages: [{ content: 'hi' }] });
    const tools = double.calls[0].body.tools as { function: { name: string; parameters: unknown } }[];
    toolNames = tools.map((t) => t.function.name).sort();
    toolParameters = Object.fromEntries(tools.map((t) => [t.function.name, t.function.parameters]));
  }, 90_000);

  afterAll(async () => {
    await pg.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pg.end();
    await worker.close();
    await api.close();
    await double.stop();
  });

  beforeEach(() => double.reset());

  /** Every assistant tool, by the rules it reaches; a new tool must be placed here. */
  const TOOL_RULES: Record<string, ('feed' | 'secret' | 'upload')[]> = {
    run_tap: ['feed'],
    register_pipeline: ['secret'],
    upload_attachment: ['upload'],
    // Reaches the secret rule with a stored tap's own code, or with inline code stripped of any secret.
    test_tap: [],
    list_pipelines: [],
    get_pipeline: [],
    generate_pipeline_from_attachment: [],
    get_codegen_scripts: [],
    restore_codegen_script_version: [],
    job_status: [],
    list_taps: [],
    get_tap: [],
    generate_tap_script: [],
    fix_tap_script: [],
    vector_search: [],
    sql_query: [],
    discover_metadata: [],
  };

  it('knows every assistant tool, and only register_pipeline takes a configuration that can name a secret', () => {
    expect(Object.keys(TOOL_RULES).sort()).toEqual(toolNames);
    for (const [name, parameters] of Object.entries(toolParameters)) {
      // A tool given a `secretName` parameter, or free-form configuration, needs a secret case below.
      const free = JSON.stringify(parameters).includes('secretName') || name === 'register_pipeline';
      expect([name, free]).toEqual([name, TOOL_RULES[name].includes('secret')]);
    }
  });

  describe('a tap feeds only a pipeline its saver and its runner may upload to (TapPolicy)', () => {
    // The message and domain code of a pipeline that does not exist: the refusal reveals nothing.
    const refusedFeed = {
      status: 404,
      code: 'pipeline.not_found',
      message: "pipeline 'target' does not exist",
    };
    /** Each route that takes a target or starts a run, with its case or why it does not feed. */
    const routes: Record<string, (() => Promise<void>) | string> = {
      'POST /tap': async () => {
        const res = await post(noFeed, '/tap', { name: 'nf_save', targetPipeline: 'target', script });
        expect({ status: res.status, code: res.body.code, message: res.body.message }).toEqual(refusedFeed);
        await get(admin, '/tap', { name: 'nf_save' }).expect(404);
      },
      'POST /tap/run': async () => {
        const res = await post(noFeed, '/tap/run', { name: 'fed', mode: 'run' });
        expect({ status: res.status, code: res.body.code, message: res.body.message }).toEqual(refusedFeed);
        // Refused before the debounce claim and the run history.
        expect((await get(admin, '/tap/runs', { name: 'fed' }).expect(200)).body).toEqual([]);
      },
      'POST /tap/test': 'a test loads nothing: tap:run on the tap is enough',
    };

    it('through every route', async () => {
      // Every route found in the API's own document has its case (none is found by another way).
      expect(operationsCarrying(doc, ['targetPipeline', 'mode'])).toEqual(Object.keys(routes).sort());
      // The pipeline exists: the refusal is the rule's, not a missing pipeline.
      await get(admin, '/pipeline', { pipeline: 'target' }).expect(200);
      for (const [route, check] of Object.entries(routes)) {
        if (typeof check === 'string') continue;
        await check().catch((err: Error) => {
          throw new Error(`${route}: ${err.message}`);
        });
      }
    });

    it('through every assistant tool', async () => {
      const feeding = Object.keys(TOOL_RULES).filter((t) => TOOL_RULES[t].includes('feed'));
      expect(feeding).toEqual(['run_tap']);
      const result = await callTool(noFeed, 'run_tap', { name: 'fed' });
      expect(result.error).toBe("404: pipeline 'target' does not exist");
      expect((await get(admin, '/tap/runs', { name: 'fed' }).expect(200)).body).toEqual([]);
    });

    it('through the scheduler: a scheduled run obeys the grant of whoever last changed the code', async () => {
      // Saved before its pipeline exists (allowed: nothing to feed yet), on a schedule every second. It
      // is enabled only once the pipeline exists (a run before would fail for the missing pipeline), by
      // the admin: turning a schedule on does not change the code, so the code's last changer stays noFeed.
      await post(noFeed, '/tap', {
        name: 'scheduled',
        targetPipeline: 'later',
        script,
        cronExpression: '* * * * * ?',
        enabled: false,
      }).expect(200);
      await post(
        admin,
        '/pipeline',
        csvPipeline('later', 'b', { database: { schema, table: 'later' } }),
      ).expect(200);
      await post(admin, '/tap', { name: 'scheduled', enabled: true }).expect(200);
      let runs: { trigger: string; status: string; error: string | null }[] = [];
      for (let i = 0; i < 300 && !runs.some((r) => r.trigger === 'schedule' && r.status !== 'running'); i++) {
        await new Promise((r) => setTimeout(r, 100));
        runs = (await get(admin, '/tap/runs', { name: 'scheduled' }).expect(200)).body;
      }
      await post(admin, '/tap', { name: 'scheduled', enabled: false }).expect(200);
      const fired = runs.find((r) => r.trigger === 'schedule' && r.status !== 'running');
      expect(fired).toMatchObject({
        status: 'error',
        error:
          "tap 'scheduled' may not load into pipeline 'later': whoever last changed the tap's code (or " +
          'started this run) lacks pipeline:upload on it',
      });
      const table = await pg.query(`SELECT to_regclass($1) AS t`, [`"${schema}"."later"`]);
      expect(table.rows[0].t).toBeNull();
    }, 60_000);
  });

  describe('naming a secret needs secret:use (SecretPolicy, through TapPolicy and PipelinePolicy)', () => {
    const lacks = (why: string) => ({
      status: 403,
      message: `'no-secret' lacks the capability secret:use ${why}`,
    });
    const toCode = lacks('to give a secret to code it changes or runs');
    const routes: Record<string, () => Promise<void>> = {
      'POST /pipeline': async () => {
        const res = await post(noSecret, '/pipeline', csvPipeline('leaky', null, restWithSecret));
        expect({ status: res.status, message: res.body.message }).toEqual(
          lacks("to hand secret 'vendor' to a destination"),
        );
        await get(admin, '/pipeline', { pipeline: 'leaky' }).expect(404);
      },
      'POST /tap': async () => {
        const res = await post(noSecret, '/tap', { name: 'steal', secretName: 'vendor', script });
        expect({ status: res.status, message: res.body.message }).toEqual(toCode);
        await get(admin, '/tap', { name: 'steal' }).expect(404);
      },
      'POST /tap/test': async () => {
        const res = await post(noSecret, '/tap/test', { name: 'secretive', script: `${script}# new\n` });
        expect({ status: res.status, message: res.body.message }).toEqual(toCode);
      },
      'POST /tap/generate': async () => {
        const body = { tapName: 'writer', description: 'fetch the vendor feed', secretName: 'vendor' };
        const res = await post(noSecret, '/tap/generate', body);
        expect({ status: res.status, message: res.body.message }).toEqual(
          lacks('to write code for a secret'),
        );
      },
      // Not found by its body: verifying tests new code with the tap's own secret.
      'POST /tap/optimize': async () => {
        const body = { tapName: 'secretive', script, recordCount: 1, durationMs: 10, verify: true };
        const res = await post(noSecret, '/tap/optimize', body);
        expect({ status: res.status, message: res.body.message }).toEqual(
          lacks("to run new code with the tap's secret"),
        );
      },
    };

    it('through every route whose body can name one', async () => {
      // Every route found in the API's own document has its case; optimize is the one found by reading it.
      const found = operationsCarrying(doc, ['secretName', 'destination']);
      expect(found).toEqual(
        Object.keys(routes)
          .filter((r) => r !== 'POST /tap/optimize')
          .sort(),
      );
      for (const [route, check] of Object.entries(routes)) {
        await check().catch((err: Error) => {
          throw new Error(`${route}: ${err.message}`);
        });
      }
      // Refused before any model call.
      expect(double.calls).toHaveLength(0);
      // The same key does all of it when no secret is named: the refusals above are this rule's.
      await post(
        noSecret,
        '/pipeline',
        csvPipeline('plain', null, { database: { schema, table: 'plain' } }),
      ).expect(200);
      await post(noSecret, '/tap', { name: 'plain', script }).expect(200);
    });

    it('through every assistant tool', async () => {
      const naming = Object.keys(TOOL_RULES).filter((t) => TOOL_RULES[t].includes('secret'));
      expect(naming).toEqual(['register_pipeline']);
      const result = await callTool(noSecret, 'register_pipeline', {
        config: csvPipeline('leaky', null, restWithSecret),
      });
      expect(result.error).toBe(
        "403: 'no-secret' lacks the capability secret:use to hand secret 'vendor' to a destination",
      );
      await get(admin, '/pipeline', { pipeline: 'leaky' }).expect(404);
    });
  });

  describe('a save is checked on the type the pipeline is stored with, not the format the body says', () => {
    // Non-null unstructuredAttributes make a document pipeline (stored as `unstructured`) whatever `format` says.
    const documentSaidCsv = (name: string) => ({
      name,
      source: {
        fileAttributes: { format: 'csv', unstructuredAttributes: {} },
        schemaProperties: { fields: [] },
      },
      destination: { database: { schema, table: name } },
    });
    const hidden = (name: string) => ({
      status: 404,
      message: `pipeline '${name}' cannot be saved in that catalog`,
    });

    it('through the route and the assistant tool', async () => {
      const csvOnly = await issueKey(api.http, admin, 'csv-only', {
        capabilities: ['pipeline:read:type=csv', 'pipeline:update:type=csv', 'assistant:run'],
      });
      const created = await post(csvOnly, '/pipeline', documentSaidCsv('typed_doc'));
      expect({ status: created.status, message: created.body.message }).toEqual(hidden('typed_doc'));
      await get(admin, '/pipeline', { pipeline: 'typed_doc' }).expect(404);
      const tool = await callTool(csvOnly, 'register_pipeline', { config: documentSaidCsv('typed_doc') });
      expect(tool.error).toBe("404: pipeline 'typed_doc' cannot be saved in that catalog");
      await get(admin, '/pipeline', { pipeline: 'typed_doc' }).expect(404);

      // Its own csv pipeline (the format left out: the schema makes it csv) cannot become a document one.
      const own = csvPipeline('typed_csv', null, { database: { schema, table: 'typed_csv' } });
      delete (own.source.fileAttributes as { format?: string }).format;
      await post(csvOnly, '/pipeline', own).expect(200);
      const converted = await post(csvOnly, '/pipeline', documentSaidCsv('typed_csv'));
      expect({ status: converted.status, message: converted.body.message }).toEqual(hidden('typed_csv'));
      const stored = await get(admin, '/pipeline', { pipeline: 'typed_csv' }).expect(200);
      expect(stored.body.source.fileAttributes.format).toBe('csv');
    });
  });

  describe('an upload needs pipeline:upload on its pipeline (PipelinePolicy)', () => {
    it('through the route and the assistant tool', async () => {
      const res = await api.http
        .post('/api/v1/pipeline/upload')
        .set('x-api-key', uploaderA)
        .field('pipeline', 'target')
        .attach('file', Buffer.from('n\n1\n'), 'rows.csv');
      expect({ status: res.status, code: res.body.code, message: res.body.message }).toEqual({
        status: 404,
        code: 'pipeline.not_found',
        message: "pipeline 'target' does not exist",
      });
      const uploading = Object.keys(TOOL_RULES).filter((t) => TOOL_RULES[t].includes('upload'));
      expect(uploading).toEqual(['upload_attachment']);
      const form = new FormData();
      form.append('file', new Blob(['n\n1\n'], { type: 'text/csv' }), 'rows.csv');
      const attached = await fetch(`${base}/assistant/attachment`, {
        method: 'POST',
        headers: { 'x-api-key': uploaderA },
        body: form,
      });
      expect(attached.status).toBe(201);
      const { attachmentId } = (await attached.json()) as { attachmentId: string };
      const result = await callTool(uploaderA, 'upload_attachment', { attachmentId, pipeline: 'target' });
      expect(result.error).toBe("404: pipeline 'target' does not exist");
    });
  });

  describe('deleting a tap', () => {
    it('removes the tap and its ledger together: a delete that fails loses neither', async () => {
      await post(admin, '/tap', { name: 'doomed', script }).expect(200);
      for (const uri of ['https://example.test/a.pdf', 'https://example.test/b.pdf']) {
        await pg.query(
          `INSERT INTO tapyard.tap_ledger (environment, tap, uri, filename, content_hash, staged_path, pipeline_token)
           VALUES ($1, 'doomed', $2, 'a.pdf', 'h', 'nowhere/none', 'tok')`,
          [env, uri],
        );
      }
      // A fault in the database while the tap row goes, for this environment's tap only.
      const fn = `tapyard."fail_${schema}"`;
      await pg.query(
        `CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected'; END $$`,
      );
      await pg.query(
        `CREATE TRIGGER "fail_${schema}" BEFORE DELETE ON tapyard.taps FOR EACH ROW
         WHEN (OLD.environment = '${env}' AND OLD.name = 'doomed') EXECUTE FUNCTION ${fn}()`,
      );
      try {
        await api.http.delete('/api/v1/tap').query({ name: 'doomed' }).set('x-api-key', admin).expect(500);
      } finally {
        await pg.query(`DROP TRIGGER "fail_${schema}" ON tapyard.taps`);
        await pg.query(`DROP FUNCTION ${fn}()`);
      }
      await get(admin, '/tap', { name: 'doomed' }).expect(200);
      expect((await get(admin, '/tap/ledger', { name: 'doomed' }).expect(200)).body).toHaveLength(2);

      const done = await api.http
        .delete('/api/v1/tap')
        .query({ name: 'doomed' })
        .set('x-api-key', admin)
        .expect(200);
      expect(done.body).toEqual({ status: 'ok', tap: 'doomed', ledgerEntriesDeleted: 2 });
      await get(admin, '/tap', { name: 'doomed' }).expect(404);
      const left = await pg.query(
        `SELECT count(*)::int AS n FROM tapyard.tap_ledger WHERE environment = $1`,
        [env],
      );
      expect(left.rows[0].n).toBe(0);
    });
  });
});
