import { AssistantTools, toolSchema } from '@tapyard/assistant';
import { TestApi, startApi } from './support/apps';
import { chat as chatAs } from './support/assistant-chat';
import { newBootstrapKey } from './support/auth';
import { TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { ModelDouble } from './support/model-double';
import { closedPort } from './support/net';

/** The tools' JSON Schemas as the model was sent them before they were generated from DTOs (issue 26). */
const BEFORE: Record<
  string,
  { required: string[]; types: Record<string, string>; enums?: Record<string, string[]> }
> = {
  list_pipelines: { required: [], types: {} },
  get_pipeline: { required: ['name'], types: { name: 'string' } },
  generate_pipeline_from_attachment: {
    required: ['attachmentId'],
    types: { attachmentId: 'string', name: 'string' },
  },
  register_pipeline: { required: ['config'], types: { config: 'object' } },
  get_codegen_scripts: { required: ['pipeline'], types: { pipeline: 'string' } },
  restore_codegen_script_version: {
    required: ['pipeline', 'kind', 'version'],
    types: { pipeline: 'string', kind: 'string', version: 'integer' },
    enums: { kind: ['dataQuality', 'transformation'] },
  },
  upload_attachment: {
    required: ['attachmentId', 'pipeline'],
    types: { attachmentId: 'string', pipeline: 'string' },
  },
  job_status: { required: [], types: { pipelineToken: 'string', publisherToken: 'string' } },
  list_taps: { required: [], types: {} },
  get_tap: { required: ['name'], types: { name: 'string' } },
  test_tap: { required: ['name'], types: { name: 'string', script: 'string', testLimit: 'integer' } },
  generate_tap_script: {
    required: ['tapName', 'description'],
    types: { tapName: 'string', description: 'string', tapType: 'string' },
    enums: { tapType: ['structured', 'document'] },
  },
  fix_tap_script: {
    required: ['tapName', 'script'],
    types: { tapName: 'string', script: 'string', error: 'string', logs: 'string' },
  },
  run_tap: { required: ['name'], types: { name: 'string' } },
  vector_search: {
    required: ['store', 'query'],
    types: {
      store: 'string',
      query: 'string',
      topK: 'integer',
      collection: 'string',
      className: 'string',
      table: 'string',
      schema: 'string',
    },
    enums: { store: ['qdrant', 'weaviate', 'pgvector', 'milvus', 'chroma'] },
  },
  sql_query: {
    required: ['question'],
    types: { question: 'string', database: 'string', schema: 'string', maxRows: 'integer' },
  },
  discover_metadata: {
    required: ['kind'],
    types: { kind: 'string', database: 'string', schema: 'string', table: 'string' },
    enums: {
      kind: ['databases', 'schemas', 'tables', 'columns', 'mongodb_databases', 'mongodb_collections'],
    },
  },
};

interface Sent {
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/**
 * Each assistant tool is a (DTO, service method) pair: the model is sent the schema generated from the
 * DTO, and a call's arguments go through the same validation as a route body, so a bad call is
 * refused with the message the route gives. Real API, the model played by the loopback wire double.
 */
describe('assistant tools: schemas generated from DTOs, arguments validated as routes validate', () => {
  const env = uniqueEnvironment('toolargs');
  const admin = newBootstrapKey();
  const double = new ModelDouble();
  let api: TestApi;
  let base: string;

  const chat = () => chatAs(base, admin, { messages: [{ content: 'go' }] });

  beforeAll(async () => {
    await double.start();
    const port = await closedPort();
    base = `http://127.0.0.1:${port}/api/v1`;
    api = await startApi({
      TAPYARD_ENV: env,
      ...TEST_OBJECT_STORE,
      TAP_EGRESS_ALLOW: double.address,
      USE_API_KEYS: 'true',
      TAPYARD_BOOTSTRAP_API_KEY: admin,
    });
    await api.app.listen(port, '127.0.0.1');
    await api.http
      .put('/api/v1/secrets/ai')
      .set('x-api-key', admin)
      .send({ provider: 'openai-compatible', baseUrl: double.openaiUrl, model: 'm' })
      .expect(200);
  }, 60000);
  afterAll(async () => {
    await api.close();
    await double.stop();
  });
  beforeEach(() => double.reset());

  it('sends each tool the schema its DTO generates, with the properties, types, required and enums it had', async () => {
    double.script({ text: 'hello' });
    await chat();
    const sent = double.calls[0].body.tools as Sent[];
    const dtos = api.app.get(AssistantTools).argumentTypes();
    expect(sent.map((t) => t.function.name).sort()).toEqual(Object.keys(BEFORE).sort());
    for (const { function: f } of sent) {
      const dto = dtos.get(f.name);
      expect(dto).toBeDefined();
      expect(f.parameters).toEqual(toolSchema(dto!));
      const props = f.parameters.properties as Record<string, { type: string; enum?: string[] }>;
      const before = BEFORE[f.name];
      expect({ name: f.name, required: [...(f.parameters.required as string[])].sort() }).toEqual({
        name: f.name,
        required: [...before.required].sort(),
      });
      expect(f.parameters.additionalProperties).toBe(false);
      expect({
        name: f.name,
        types: Object.fromEntries(Object.entries(props).map(([k, p]) => [k, p.type])),
      }).toEqual({
        name: f.name,
        types: before.types,
      });
      for (const [prop, values] of Object.entries(before.enums ?? {}))
        expect(props[prop].enum).toEqual(values);
    }
  });

  it.each([
    ['a wrong type', { query: 5 }],
    ['a missing required argument', {}],
    ['an unknown property', { query: 'leave', extra: 1 }],
    ['an out-of-bounds number', { query: 'leave', topK: 1000 }],
  ])('refuses %s with the 400 message POST /search/{store} gives for the same body', async (_, body) => {
    const route = await api.http.post('/api/v1/search/qdrant').set('x-api-key', admin).send(body);
    expect(route.status).toBe(400);
    // An unknown property's 400 lists the properties of its own schema: the tool's has `store`
    // (the route's path parameter) where the route's body has `filter`; the rest of the words are the same.
    const message = (route.body as { message: string }).message.replace(
      'query, topK, filter,',
      'store, query, topK,',
    );
    expect(message).toMatch(/^invalid request: /);

    double.script(
      { toolCalls: [{ name: 'vector_search', arguments: { store: 'qdrant', ...body } }] },
      { text: 'that did not work' },
    );
    const events = await chat();
    const result = events.find((e) => e.event === 'tool_result');
    expect(result?.data).toMatchObject({ name: 'vector_search', error: `400: ${message}` });
    // The model is told the same, inside the untrusted-data envelope.
    const toolTurn = (double.calls[1].body.messages as { role: string; content: string }[]).find(
      (m) => m.role === 'tool',
    );
    expect(JSON.parse(toolTurn!.content)).toEqual({ untrusted_data: { error: `400: ${message}` } });
  });

  it("refuses an acting tool's bad arguments before the user is asked: no pending action", async () => {
    double.script(
      {
        toolCalls: [
          { name: 'restore_codegen_script_version', arguments: { pipeline: 'p', kind: 'other', version: 0 } },
        ],
      },
      { text: 'ok' },
    );
    const events = await chat();
    expect(events.some((e) => e.event === 'pending_action')).toBe(false);
    const result = events.find((e) => e.event === 'tool_result');
    expect(result?.data.error).toBe(
      '400: invalid request: kind must be one of the following values: dataQuality, transformation',
    );
  });
});
