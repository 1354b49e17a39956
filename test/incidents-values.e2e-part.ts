import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { issueKey, newBootstrapKey } from './support/auth';
import { TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { csvPipeline, upload, waitForJob } from './support/ingest';
import { ModelDouble } from './support/model-double';

/**
 * What incident evidence and a pending script's reason may show: values from the pipeline's rows only
 * to a caller who may read those rows (`search:query` over the pipeline's database), and a failed dry
 * run's reason never quoting a row (real sandbox, worker, Postgres, MinIO; the model a loopback double).
 */

const DQ_V1 = `def check(rows):
    return [("amount is negative" if r["amount"] is not None and r["amount"] < 0 else None) for r in rows]
`;
const DQ_STRICT = `def check(rows):
    return [("amount below 100" if r["amount"] is None or r["amount"] < 100 else None) for r in rows]
`;
// Builds its exception from a row's value, as real scripts do ("bad value ...").
const DQ_QUOTES_A_ROW = `def check(rows):
    raise ValueError("cannot judge the city " + rows[0]["city"])
`;

interface Column {
  name: string;
  inferredType: string;
  nullRate: number;
  distinct: number;
  topK?: { value: string; count: number }[];
  quantiles?: Record<string, number>;
}
interface Evidence {
  baseline: { recordCount: number; columns: Column[] };
  candidate: { recordCount: number; columns: Column[] };
  verdict: string;
}

describe('incidents: values only for callers who may read the rows', () => {
  const env = uniqueEnvironment('incvals');
  const table = `orders_${env.replace(/[^a-z0-9]/g, '_')}`;
  const double = new ModelDouble();
  const admin = newBootstrapKey();
  let api: TestApi;
  let keyed: TestApi;
  let worker: TestWorker;
  let incidentId: string;
  const flags = () => ({ TAPYARD_ENV: env, ...TEST_OBJECT_STORE, TAP_EGRESS_ALLOW: double.address });
  const reply = (script: string) => ({ json: { script } });
  // The first row's city is the one value the tests look for.
  const csv =
    'id,amount,city\n' +
    Array.from(
      { length: 10 },
      (_, i) => `${i + 1},${i === 3 ? -5 : (i + 1) * 30},${i < 3 ? 'Zanzibar' : 'Lisbon'}`,
    ).join('\n') +
    '\n';
  const evidenceAs = async (key: string): Promise<Evidence> =>
    (await keyed.http.get(`/api/v1/incidents/${incidentId}/evidence`).set('x-api-key', key).expect(200))
      .body as Evidence;

  beforeAll(async () => {
    await double.start();
    api = await startApi(flags());
    keyed = await startApi({ ...flags(), USE_API_KEYS: 'true', TAPYARD_BOOTSTRAP_API_KEY: admin });
    worker = await startWorker(flags());
    await api.http
      .put('/api/v1/secrets/ai')
      .send({ provider: 'openai-compatible', baseUrl: double.openaiUrl, model: 'codegen-1' })
      .expect(200);
    double.script(reply(DQ_V1));
    await api.http
      .post('/api/v1/pipeline')
      .send(
        csvPipeline(
          'orders',
          table,
          [
            ['id', 'int'],
            ['amount', 'double'],
            ['city', 'string'],
          ],
          { dataQuality: { aiInstruction: 'Reject negative amounts.' } },
        ),
      )
      .expect(200);
    await waitForJob(api.http, await upload(api.http, 'orders', csv, 'orders.csv'));
    double.script(reply(DQ_STRICT));
    await api.http.post('/api/v1/pipelines/orders/codegen-scripts/dataQuality/regenerate').expect(200);
    for (let i = 0; i < 600; i++) {
      const list = (await api.http.get('/api/v1/incidents?pipeline=orders').expect(200)).body as {
        id: string;
        verdict: string;
      }[];
      if (list.length === 1 && list[0].verdict !== 'pending') {
        incidentId = list[0].id;
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(incidentId).toBeDefined();
  }, 120_000);

  afterAll(async () => {
    await api?.http.delete('/api/v1/pipeline').query({ pipeline: 'orders', deleteData: 'true' });
    await worker?.close();
    await keyed?.close();
    await api?.close();
    await double.stop();
  });

  it('a pipeline reader gets counts, types and the verdict, but no value from the rows', async () => {
    const reader = await issueKey(keyed.http, admin, 'evidence-reader', { template: 'read-only' });
    // The rows themselves are refused to this key...
    await keyed.http
      .post('/api/v1/query/postgres')
      .set('x-api-key', reader)
      .send({ question: 'which cities?' })
      .expect(403);
    // ...and so is every value of them in the evidence.
    const ev = await evidenceAs(reader);
    expect(JSON.stringify(ev)).not.toContain('Zanzibar');
    for (const profile of [ev.baseline, ev.candidate]) {
      for (const c of profile.columns) {
        expect(c.topK).toBeUndefined();
        expect(c.quantiles).toBeUndefined();
      }
    }
    expect(ev.verdict).toBe('fail');
    expect(ev.baseline.recordCount).toBe(9);
    expect(ev.baseline.columns.find((c) => c.name === 'city')).toMatchObject({
      inferredType: 'string',
      nullRate: 0,
      distinct: 2,
    });

    // search:query on another database reads none of this pipeline's rows either.
    const elsewhere = await issueKey(keyed.http, admin, 'evidence-elsewhere', {
      capabilities: ['pipeline:read', 'search:query:database=other_db'],
    });
    expect(JSON.stringify(await evidenceAs(elsewhere))).not.toContain('Zanzibar');
  });

  it('a caller who may read the rows (search:query on their database) gets the values', async () => {
    const analyst = await issueKey(keyed.http, admin, 'evidence-analyst', {
      capabilities: ['pipeline:read', 'search:query:database=tapyard_test'],
    });
    const ev = await evidenceAs(analyst);
    const city = ev.baseline.columns.find((c) => c.name === 'city')!;
    expect(city.topK).toEqual(expect.arrayContaining([{ value: 'Zanzibar', count: 3 }]));
    expect(ev.baseline.columns.find((c) => c.name === 'amount')?.quantiles).toBeDefined();
  });

  it('a dry run failing with a row value in its exception keeps the value out of pendingReason', async () => {
    double.reset();
    double.script(reply(DQ_QUOTES_A_ROW));
    const entry = (
      await api.http.post('/api/v1/pipelines/orders/codegen-scripts/dataQuality/regenerate').expect(200)
    ).body as { status: string; pendingReason: string };
    expect(entry.status).toBe('pending');
    expect(entry.pendingReason).toContain('dry run');
    expect(entry.pendingReason).toContain('check() raised ValueError');
    expect(entry.pendingReason).toMatch(/data_quality\.py", line 2, in check/);
    expect(entry.pendingReason).not.toContain('Zanzibar');
    expect(entry.pendingReason).not.toContain('cannot judge');
    expect(entry.pendingReason.length).toBeLessThanOrEqual(600);
    const again = (await api.http.get('/api/v1/pipelines/orders/codegen-scripts').expect(200)).body as {
      dataQuality: { pendingReason: string };
    };
    expect(again.dataQuality.pendingReason).toBe(entry.pendingReason);
  });
});
