import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { issueKey, newBootstrapKey } from './support/auth';
import { TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { ModelDouble } from './support/model-double';
import { vectorPeerFields } from './support/vector-peers';

interface Hit {
  text: string;
  metadata: { uri: string };
}

/**
 * Vector search in multi-tenant mode (pgvector): a tenant searches only the schema its pipelines
 * load into, by the route and by the assistant's `vector_search` tool alike.
 */
describe('search: a tenant searches only its own pgvector schema', () => {
  const operator = uniqueEnvironment('sop');
  const tenantA = uniqueEnvironment('sta');
  // A's name holds `-` (so must its schema's), B's only letters and digits (its schema passes any name rule).
  const tenantB = `stb${randomBytes(4).toString('hex')}`;
  const boot = newBootstrapKey();
  const double = new ModelDouble();
  const pgvector = vectorPeerFields('pgvector').connectionString;
  let api: TestApi;
  let worker: TestWorker;
  const keys: Record<string, string> = {};

  const text = {
    [tenantA]: '# Tenant A\n\nThe alpha warehouse opens at seven in the morning.',
    [tenantB]: '# Tenant B\n\nThe bravo payroll secret is kept in the blue binder.',
  };

  const rollupDone = async (key: string, token: string): Promise<string> => {
    for (let i = 0; i < 1200; i++) {
      const res = await api.http
        .get('/api/v1/pipeline/status')
        .set('x-api-key', key)
        .query({ pipelinetoken: token, withrollup: 'true' });
      const r = res.body?.rollup as { allDone: boolean; status: string } | undefined;
      if (res.status === 200 && r?.allDone) return r.status;
      await new Promise((ok) => setTimeout(ok, 100));
    }
    throw new Error(`job ${token} did not finish`);
  };

  const search = (key: string, body: Record<string, unknown>) =>
    api.http.post('/api/v1/search/pgvector').set('x-api-key', key).send(body);

  beforeAll(async () => {
    await double.start();
    const flags = {
      TAPYARD_ENV: operator,
      MULTI_TENANT: 'true',
      USE_API_KEYS: 'true',
      TAPYARD_BOOTSTRAP_API_KEY: boot,
      PGVECTOR_URL: pgvector,
      TAP_EGRESS_ALLOW: double.address,
      ...TEST_OBJECT_STORE,
    };
    api = await startApi(flags);
    worker = await startWorker(flags);
    for (const [label, tenant] of [
      ['a-admin', tenantA],
      ['b-admin', tenantB],
    ]) {
      const key = await issueKey(api.http, boot, label, { template: 'full-access' }, { tenant });
      keys[tenant] = key;
      // The same pipeline and table name in both tenants: only the schema tells them apart.
      await api.http
        .post('/api/v1/pipeline')
        .set('x-api-key', key)
        .send({
          name: 'docs',
          source: {
            fileAttributes: { unstructuredAttributes: { chunking: { size: 128 } } },
            schemaProperties: { fields: [] },
          },
          destination: { vectorStore: { store: 'pgvector', collection: 'docs' } },
        })
        .expect(200);
      const token = (
        await api.http
          .post('/api/v1/pipeline/upload')
          .set('x-api-key', key)
          .field('pipeline', 'docs')
          .attach('file', Buffer.from(text[tenant]), `${tenant}.md`)
          .expect(200)
      ).text;
      expect(await rollupDone(key, token)).toBe('success');
    }
    await api.http
      .put('/api/v1/secrets/ai')
      .set('x-api-key', keys[tenantA])
      .send({ provider: 'openai-compatible', baseUrl: double.openaiUrl, model: 'm' })
      .expect(200);
  }, 240_000);

  afterAll(async () => {
    for (const tenant of [tenantA, tenantB].filter((t) => keys[t])) {
      await api?.http
        .delete('/api/v1/pipeline')
        .set('x-api-key', keys[tenant])
        .query({ pipeline: 'docs', deleteData: 'true' });
    }
    const pg = new Client({ connectionString: pgvector });
    await pg.connect();
    try {
      for (const tenant of [tenantA, tenantB]) await pg.query(`DROP SCHEMA IF EXISTS "t_${tenant}" CASCADE`);
    } finally {
      await pg.end();
    }
    await worker?.close();
    await api?.close();
    await double.stop();
  });

  it("never reaches another tenant's chunks, and finds its own without naming a schema", async () => {
    const foreign = await search(keys[tenantA], {
      query: 'payroll secret',
      table: 'docs',
      schema: `t_${tenantB}`,
    });
    expect(JSON.stringify(foreign.body)).not.toContain('blue binder');
    expect(foreign.status).toBe(400);
    expect(foreign.body.message).toContain(`pgvector schema 't_${tenantB}' cannot be searched`);
    expect(foreign.body.message).toContain(`live in schema 't_${tenantA}'`);

    const own = await search(keys[tenantA], { query: 'when does the warehouse open', table: 'docs' }).expect(
      200,
    );
    const hits = own.body.results as Hit[];
    expect(hits.length).toBeGreaterThan(0);
    for (const h of hits) expect(h.metadata.uri).toBe(`upload://${tenantA}.md`);

    // Naming its own schema is the same as leaving it out; the operator's `public` is not the tenant's.
    const named = await search(keys[tenantA], {
      query: 'warehouse',
      table: 'docs',
      schema: `t_${tenantA}`,
    }).expect(200);
    expect((named.body.results as Hit[])[0].metadata.uri).toBe(`upload://${tenantA}.md`);
    await search(keys[tenantA], { query: 'warehouse', table: 'docs', schema: 'public' }).expect(400);
  });

  it("refuses the platform's schemas to the operator too", async () => {
    const res = await search(boot, { query: 'anything', table: 'docs', schema: 'tapyard' }).expect(400);
    expect(res.body.message).toContain("schema 'tapyard' belongs to the platform");
    // The operator keeps its freedom elsewhere: a tenant's schema by name.
    const op = await search(boot, { query: 'payroll', table: 'docs', schema: `t_${tenantB}` }).expect(200);
    expect((op.body.results as Hit[])[0].metadata.uri).toBe(`upload://${tenantB}.md`);
  });

  it("hides tenants' schemas from operator keys without full access, and scopes a table by its schema", async () => {
    const searcher = await issueKey(api.http, boot, 'op-searcher', { capabilities: ['search:vector'] });
    const hidden = await search(searcher, { query: 'payroll secret', table: 'docs', schema: `t_${tenantB}` });
    expect(hidden.status).toBe(404);
    expect(hidden.body.message).toBe(
      `pgvector has no container 'docs'`.replace("'docs'", `'t_${tenantB}.docs'`),
    );
    expect(JSON.stringify(hidden.body)).not.toContain('blue binder');
    // A key scoped to a table reaches it in the environment's own schema only.
    const scoped = await issueKey(api.http, boot, 'op-docs', {
      capabilities: ['search:vector:collection=docs'],
    });
    const other = await search(scoped, { query: 'payroll', table: 'docs', schema: 'analytics' });
    expect(other.status).toBe(404);
    expect(other.body.message).toContain("'analytics.docs'");
  });

  it("the assistant's vector_search tool is confined the same way", async () => {
    double.reset();
    double.script(
      {
        toolCalls: [
          {
            name: 'vector_search',
            arguments: { store: 'pgvector', query: 'payroll secret', table: 'docs', schema: `t_${tenantB}` },
          },
          { name: 'vector_search', arguments: { store: 'pgvector', query: 'warehouse', table: 'docs' } },
        ],
      },
      { text: 'Done.' },
    );
    const res = await api.http
      .post('/api/v1/assistant/chat')
      .set('x-api-key', keys[tenantA])
      .buffer(true)
      .send({ messages: [{ role: 'user', content: 'search the docs' }] })
      .expect(200);
    const events = res.text
      .split('\n\n')
      .map((block) => block.split('\n'))
      .filter((lines) => lines.some((l) => l.startsWith('event: ')))
      .map((lines) => ({
        event: lines.find((l) => l.startsWith('event: '))!.slice(7),
        data: JSON.parse(lines.find((l) => l.startsWith('data: '))!.slice(6)) as {
          error?: string;
          result?: { results: Hit[] };
        },
      }));
    const results = events.filter((e) => e.event === 'tool_result').map((e) => e.data);
    expect(results).toHaveLength(2);
    expect(results[0].error).toMatch(new RegExp(`^400: pgvector schema 't_${tenantB}' cannot be searched`));
    expect(results[1].result!.results.length).toBeGreaterThan(0);
    for (const h of results[1].result!.results) expect(h.metadata.uri).toBe(`upload://${tenantA}.md`);
    expect(res.text).not.toContain('blue binder');
    expect(JSON.stringify(double.calls[1].body.messages)).not.toContain('blue binder');
  });
});
