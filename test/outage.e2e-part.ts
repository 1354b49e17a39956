import { getQueueToken } from '@nestjs/bullmq';
import { Queue } from 'bullmq';
import { mongo } from 'mongoose';
import { IngestQueueData, QUEUES } from '@tapyard/queue';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { uniqueEnvironment } from './support/env';
import { PrivateFerretDb } from './support/ferretdb';
import { closedPort } from './support/net';
import { RollupAnswer, upload, waitForJob } from './support/ingest';
import { droppedJob } from './support/queue-jobs';
import { until } from './support/wait';

/** A MongoDB that goes away mid-job: retried loads once it is back, or an error naming it. */
describe('destination outage during a load (private FerretDB)', () => {
  const env = uniqueEnvironment('outage');
  const dir = mkdtempSync(join(tmpdir(), 'tapyard-outage-'));
  const dbName = `outage_${env.replace(/[^a-z0-9]/g, '_')}`.slice(0, 60);
  let ferret: PrivateFerretDb;
  let api: TestApi;
  let worker: TestWorker;

  const count = async (collection: string): Promise<{ n: number; distinct: number }> => {
    const client = await new mongo.MongoClient(ferret.uri).connect();
    try {
      const docs = await client
        .db(dbName)
        .collection(collection)
        .find({}, { projection: { i: 1 } })
        .toArray();
      return { n: docs.length, distinct: new Set(docs.map((d) => d.i)).size };
    } finally {
      await client.close();
    }
  };

  let flags: Record<string, string>;

  beforeAll(async () => {
    ferret = new PrivateFerretDb(await closedPort(), dir);
    await ferret.start();
    flags = {
      TAPYARD_ENV: env,
      MONGODB_URI: ferret.uri,
      // A delivery gives up on an absent server after 1 s (5 s by default): the same retries, sooner.
      MONGODB_TIMEOUT_MS: '1000',
      LOAD_RETRY_ATTEMPTS: '6',
      LOAD_RETRY_DELAY_MS: '500',
      STATUS_PROGRESS_MS: '10',
    };
    api = await startApi(flags);
    worker = await startWorker(flags);
    for (const name of ['docs', 'late']) {
      await api.http
        .post('/api/v1/pipeline')
        .send({
          name,
          source: {
            fileAttributes: { format: 'json' },
            schemaProperties: { fields: [{ name: '_json', type: 'string' }] },
          },
          destination: { database: { dbName, schema: 'x', table: name, usePostgres: false } },
        })
        .expect(200);
    }
  });
  afterAll(async () => {
    await worker.close();
    await api.close();
    await ferret.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a load retries while MongoDB is down and, once it is back, leaves every record exactly once', async () => {
    const records = 50_000;
    let ndjson = '';
    for (let i = 0; i < records; i++) ndjson += `{"i":${i}}\n`;
    // Stopped before the upload: the job starts while the file still arrives and loads fast, so
    // only this makes sure its first delivery cannot reach MongoDB.
    await ferret.stop();
    const token = await upload(api.http, 'docs', ndjson, 'docs.ndjson');
    // Down until the load itself has failed (the driver's server selection) and is to be retried.
    await until('a retry of the MongoDB load', async () => {
      const res = await api.http.get('/api/v1/pipeline/status').query({ pipelinetoken: token }).expect(200);
      return (res.body as RollupAnswer['events']).some((e) => /mongodb.*will retry/.test(e.description));
    });
    await ferret.start();
    const { rollup, events } = await waitForJob(api.http, token, 90000);
    expect(rollup.status).toBe('success');
    expect(events.some((e) => /mongodb.*will retry \(delivery \d of 6\)/.test(e.description))).toBe(true);
    expect(await count('docs')).toEqual({ n: records, distinct: records });
  }, 120000);

  it('when MongoDB stays down the job ends error naming it; after it is back a new upload loads once', async () => {
    // The job's deliveries are set where it is queued: two here, since the six of the case above
    // (backing off from 0.5 s) would only make this one wait some 20 s longer for the same end.
    const twice = await startApi({ ...flags, LOAD_RETRY_ATTEMPTS: '2' });
    try {
      await ferret.stop();
      const token = await upload(twice.http, 'late', '{"i":1}\n{"i":2}\n', 'late.ndjson');
      const { rollup, events } = await waitForJob(twice.http, token, 90000);
      expect(rollup.status).toBe('error');
      expect(events.some((e) => /mongodb.*will retry \(delivery 1 of 2\)/.test(e.description))).toBe(true);
      expect(rollup.jobs[0].lastError).toMatchObject({
        processName: 'MongoDBLoader',
        description: expect.stringMatching(/mongodb/),
      });
      // Its deliveries spent, the job is finished: the file it carried leaves Redis too.
      const queue = twice.app.get<Queue<IngestQueueData>>(getQueueToken(QUEUES.ingest));
      const kept = await droppedJob(queue, `${env}.${token}`);
      expect(kept).toMatchObject({ inlineDropped: Buffer.byteLength('{"i":1}\n{"i":2}\n') });
      expect(kept.inline).toBeUndefined();
    } finally {
      await twice.close();
    }
    await ferret.start();
    const again = await upload(api.http, 'late', '{"i":1}\n{"i":2}\n', 'late.ndjson');
    expect((await waitForJob(api.http, again, 60000)).rollup.status).toBe('success');
    expect(await count('late')).toEqual({ n: 2, distinct: 2 });
    await api.http.get('/api/v1/version').expect(200);
  }, 120000);
});
