import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { zip } from './support/archives';
import { Cluster, ServiceName, startCluster } from './support/cluster';
import { ModelDouble } from './support/model-double';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The data-quality script the model double "writes" for the CodeGen pipeline. */
const NEGATIVE_AMOUNTS = `def check(rows):
    return ["amount is negative" if r["amount"] is not None and r["amount"] < 0 else None for r in rows]
`;

interface Rollup {
  allDone: boolean;
  status: string;
  jobs: { pipelineToken: string; status: string; lastError?: { processName: string; description: string } }[];
}

/**
 * Issue 25: every data path with the API and the workers on hosts of their own (scripts/cluster), which
 * share nothing but the services host's PostgreSQL, Redis and MinIO. Each upload enters through the API
 * host and is loaded by a worker host; then worker hosts and services fail in the middle of loads.
 */
describe('cluster: data paths across hosts (API host, worker hosts, services host)', () => {
  let cluster: Cluster;
  let double: ModelDouble;

  const call = (method: string, path: string, body?: unknown): Promise<Response> =>
    fetch(`${cluster.apiUrl}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
    });
  const ok = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await call(method, path, body);
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  };
  /** The multipart upload as clients send it (pipeline first), so its job loads while the file arrives. */
  const upload = async (pipeline: string, filename: string, body: Buffer | string, publisher?: string) => {
    const form = new FormData();
    form.append('pipeline', pipeline);
    if (publisher) form.append('publishertoken', publisher);
    form.append('file', new Blob([body]), filename);
    const res = await fetch(`${cluster.apiUrl}/pipeline/upload`, {
      method: 'POST',
      body: form,
      signal: AbortSignal.timeout(120_000),
    });
    if (res.status !== 200) throw new Error(`upload: ${res.status} ${await res.text()}`);
    return res.text();
  };
  async function rollup(query: Record<string, string>, limitMs = 180_000): Promise<Rollup> {
    const end = Date.now() + limitMs;
    for (;;) {
      const res = await call(
        'GET',
        `/pipeline/status?${new URLSearchParams({ ...query, withrollup: 'true' })}`,
      ).catch(() => null);
      if (res?.status === 200) {
        const r = ((await res.json()) as { rollup: Rollup }).rollup;
        if (r.allDone) return r;
      }
      if (Date.now() > end)
        throw new Error(`no terminal status for ${JSON.stringify(query)} in ${limitMs} ms`);
      await sleep(250);
    }
  }
  /** A rollup's status and its first failure, so a failed expectation says why. */
  const outcome = (r: Rollup) => ({
    status: r.status,
    error: r.jobs.find((j) => j.lastError)?.lastError?.description ?? null,
  });
  const csvPipeline = (name: string) =>
    ok('POST', '/pipeline', {
      name,
      source: {
        fileAttributes: { format: 'csv' },
        schemaProperties: {
          fields: [
            { name: 'id', type: 'int' },
            { name: 'label', type: 'string' },
          ],
        },
      },
      destination: { database: { schema: 'public', table: name } },
    });
  const csv = (from: number, to: number) => {
    const lines = ['id,label'];
    for (let i = from; i <= to; i++) lines.push(`${i},row ${i}`);
    return `${lines.join('\n')}\n`;
  };
  /** Rows and distinct ids of a table, on a connection of its own: PostgreSQL restarts in some tests. */
  const counts = async (table: string, column = 'id') => {
    const pg = new Client({ connectionString: cluster.services.databaseUrl });
    pg.on('error', () => undefined);
    await pg.connect();
    try {
      return (
        await pg.query<{ n: string; d: string }>(
          `SELECT count(*) AS n, count(DISTINCT "${column}") AS d FROM public."${table}"`,
        )
      ).rows[0];
    } finally {
      await pg.end().catch(() => undefined);
    }
  };
  /** The events of a job so far (none yet: []). */
  const events = async (token: string) => {
    const res = await call('GET', `/pipeline/status?pipelinetoken=${token}`);
    return res.status === 200 ? ((await res.json()) as { processName: string; state: string }[]) : [];
  };
  const loading = async (token: string, limitMs = 60_000) => {
    const end = Date.now() + limitMs;
    for (;;) {
      const seen = await events(token);
      if (seen.some((e) => e.processName === 'PostgresLoader')) return;
      if (Date.now() > end) {
        throw new Error(`job ${token} did not start loading in ${limitMs} ms: ${JSON.stringify(seen)}`);
      }
      await sleep(50);
    }
  };
  /** Nothing of finished jobs stays in the object store's staging area nor on any host's disk. */
  async function nothingStaged(): Promise<void> {
    for (const host of Object.keys(cluster.hosts)) {
      const left = await cluster.exec(host, [
        'sh',
        '-c',
        'find /var/lib/tapyard/spool -type f 2>/dev/null | wc -l',
      ]);
      expect({ host, files: left.stdout.trim() }).toEqual({ host, files: '0' });
    }
  }

  beforeAll(async () => {
    cluster = await startCluster({
      workers: 2,
      env: {
        // A dead worker's job is taken by another after this (the lock it no longer renews).
        WORKER_LOCK_MS: '4000',
        STATUS_PROGRESS_MS: '100',
        TAP_SANDBOX: 'require',
      },
    });
    // The model double listens on the cluster's bridge, a private address the hosts may reach only when
    // allowed: its address joins the hosts' settings, and the hosts start again with it.
    double = await new ModelDouble().start(cluster.bridgeAddress);
    appendFileSync(join(cluster.dir, 'extra.env'), `TAP_EGRESS_ALLOW=${double.address}\n`);
    for (const host of ['api', 'w1', 'w2']) {
      await cluster.killHost(host);
      await cluster.startHost(host);
    }
  }, 300_000);

  afterAll(async () => {
    await double?.stop();
    await cluster?.stop();
  }, 150_000);

  it('a CSV streamed to the API host is loaded by a worker host, and no host keeps a file of it', async () => {
    await csvPipeline('streamed');
    const token = await upload('streamed', 'rows.csv', csv(1, 50_000));
    const r = await rollup({ pipelinetoken: token });
    expect(r.status).toBe('success');
    expect(await counts('streamed')).toEqual({ n: '50000', d: '50000' });
    await nothingStaged();
  });

  it('a JSON file and a zipped set of CSV files load through worker hosts', async () => {
    await ok('POST', '/pipeline', {
      name: 'events',
      source: {
        fileAttributes: { format: 'json' },
        // A JSON pipeline keeps each record whole.
        schemaProperties: { fields: [{ name: '_json', type: 'string' }] },
      },
      destination: { database: { schema: 'public', table: 'events' } },
    });
    const json = JSON.stringify(
      Array.from({ length: 2000 }, (_, i) => ({ id: i + 1, kind: i % 2 ? 'a' : 'b' })),
    );
    const token = await upload('events', 'events.json', json);
    expect(outcome(await rollup({ pipelinetoken: token }))).toEqual({ status: 'success', error: null });
    expect(await counts('events', '_json')).toEqual({ n: '2000', d: '2000' });

    await csvPipeline('zipped');
    const files = [0, 1, 2].map((k) => ({ name: `part-${k}.csv`, data: csv(k * 1000 + 1, k * 1000 + 1000) }));
    await upload('zipped', 'set.zip', zip(files), 'zipped-set');
    const set = await rollup({ publishertoken: 'zipped-set' });
    expect(set.status).toBe('success');
    // The archive's own job and one job per file.
    expect(set.jobs).toHaveLength(4);
    expect(await counts('zipped')).toEqual({ n: '3000', d: '3000' });
    await nothingStaged();
  });

  it('a document uploaded to the API host is embedded by a worker host into pgvector', async () => {
    await ok('POST', '/pipeline', {
      name: 'kb',
      source: { fileAttributes: { unstructuredAttributes: {} }, schemaProperties: { fields: [] } },
      destination: { vectorStore: { store: 'pgvector', collection: 'kb_docs' } },
    });
    const doc =
      '# Leave\n\nEvery employee gets twenty-five days of paid vacation each year.\n\n' +
      '# Canteen\n\nThe canteen serves lunch from noon to two.\n';
    const token = await upload('kb', 'handbook.md', doc);
    expect(outcome(await rollup({ pipelinetoken: token }))).toEqual({ status: 'success', error: null });
    const { results: hits } = await ok<{ results: { text: string }[] }>('POST', '/search/pgvector', {
      query: 'How many vacation days do I get?',
      table: 'kb_docs',
      topK: 1,
    });
    expect(hits).toEqual([expect.objectContaining({ text: expect.stringMatching(/twenty-five days/) })]);
  });

  it("a tap run's records are staged by the API host and loaded by a worker host", async () => {
    await csvPipeline('tapped');
    await ok('POST', '/tap', {
      name: 'counter',
      targetPipeline: 'tapped',
      script: 'def fetch():\n    for i in range(1, 3001):\n        yield {"id": i, "label": f"tap {i}"}\n',
    });
    const run = await ok<{ status: string; publisherToken: string; persisted: boolean }>('POST', '/tap/run', {
      name: 'counter',
      mode: 'run',
    });
    expect(run).toMatchObject({ status: 'success', persisted: true });
    expect((await rollup({ publishertoken: run.publisherToken })).status).toBe('success');
    expect(await counts('tapped')).toEqual({ n: '3000', d: '3000' });
  });

  it('a CodeGen pipeline: its script, written through the model, checks the rows in a worker host sandbox', async () => {
    // Every attempt to write the script gets it (a background write may start when the pipeline is saved).
    double.script(...Array.from({ length: 6 }, () => ({ json: { script: NEGATIVE_AMOUNTS } })));
    await ok('PUT', '/secrets/ai', {
      provider: 'openai-compatible',
      baseUrl: double.openaiUrl,
      model: 'base-1',
      'model.codegen': 'codegen-1',
    });
    await ok('POST', '/pipeline', {
      name: 'checked',
      source: {
        fileAttributes: { format: 'csv' },
        schemaProperties: {
          fields: [
            { name: 'id', type: 'int' },
            { name: 'amount', type: 'double' },
          ],
        },
      },
      destination: { database: { schema: 'public', table: 'checked' } },
      dataQuality: { aiInstruction: 'Reject rows whose amount is negative.' },
    });
    // Written through the model (the API host calls it); the job on a worker host reads and runs it.
    const written = await call(
      'POST',
      '/pipelines/checked/codegen-scripts/dataQuality/regenerate?overwrite=true',
    );
    if (written.status !== 200) throw new Error(`regenerate: ${written.status} ${await written.text()}`);
    const token = await upload('checked', 'amounts.csv', 'id,amount\n1,5\n2,-1\n3,7\n');
    expect(outcome(await rollup({ pipelinetoken: token }))).toEqual({ status: 'warning', error: null });
    expect(await counts('checked')).toEqual({ n: '2', d: '2' });
    expect(double.calls.length).toBeGreaterThan(0);
  });

  it('a worker host killed in the middle of a 1,000,000-row load: another host finishes it, every row once', async () => {
    await csvPipeline('million');
    // w1 alone takes the job; w2 comes back only once w1 is gone.
    await cluster.killHost('w2');
    const token = await upload('million', 'million.csv', csv(1, 1_000_000));
    await loading(token);
    await cluster.killHost('w1');
    await cluster.startHost('w2');
    const r = await rollup({ pipelinetoken: token }, 300_000);
    expect(r.status).toBe('success');
    expect(await counts('million')).toEqual({ n: '1000000', d: '1000000' });
    await cluster.startHost('w1');
  }, 600_000);

  describe.each<[ServiceName, string]>([
    ['postgres', 'postgres'],
    ['redis', 'redis'],
    ['minio', 'object store'],
  ])('%s restarted in the middle of a load', (service, named) => {
    it(`the job ends loaded once or in error saying why, nothing duplicated; the API answers and recovers (${named})`, async () => {
      const table = `during_${service}`;
      await csvPipeline(table);
      // Large enough that the restart comes while it loads (the CSV fast path loads some 300k rows/s).
      const token = await upload(table, 'rows.csv', csv(1, 2_000_000));
      await loading(token);
      const root = cluster.apiUrl.replace(/\/api\/v1$/, '');
      await cluster.restartService(service, async () => {
        // Meanwhile the API answers, 503 where it needs the service, and does not hang.
        if (service === 'minio') {
          const form = new FormData();
          form.append('pipeline', table);
          // Past INLINE_UPLOAD_BYTES: a smaller upload travels in its job and needs no object store.
          form.append('file', new Blob([csv(1, 5_000)]), 'staged.csv');
          const before = cluster.logs('api').length;
          const res = await fetch(`${cluster.apiUrl}/pipeline/upload`, {
            method: 'POST',
            body: form,
            signal: AbortSignal.timeout(30_000),
          }).catch((err: Error) => {
            // A connection error hides the API's side (so it failed in two CI runs, never alone): say what
            // the API host logged meanwhile.
            throw new Error(
              `${err.message} (${String(err.cause)}); the API host logged: ` +
                cluster.logs('api').slice(before).slice(-4000),
            );
          });
          expect(res.status).toBe(503);
          expect(((await res.json()) as { message: string }).message).toMatch(/object store/);
        } else {
          const end = Date.now() + 30_000;
          while ((await fetch(`${root}/readyz`, { signal: AbortSignal.timeout(10_000) })).status !== 503) {
            if (Date.now() > end) throw new Error(`/readyz did not answer 503 while ${service} was down`);
            await sleep(200);
          }
        }
      });
      const end = Date.now() + 60_000;
      while ((await call('GET', '/pipelines').catch(() => null))?.status !== 200) {
        if (Date.now() > end) throw new Error(`the API did not recover after ${service} came back`);
        await sleep(250);
      }
      const r = await rollup({ pipelinetoken: token }, 300_000);
      const { n, d } = await counts(table);
      expect(n).toBe(d);
      if (r.status === 'success') expect(n).toBe('2000000');
      else {
        expect(r.status).toBe('error');
        expect(n).toBe('0');
        expect(r.jobs[0].lastError?.description).toMatch(new RegExp(named, 'i'));
      }
    }, 600_000);
  });
});
