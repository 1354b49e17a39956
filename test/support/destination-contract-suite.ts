import { Type } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Readable } from 'node:stream';
import type TestAgent from 'supertest/lib/agent';
import {
  DESTINATION_PLUGINS,
  Destination,
  MongoDbDestination,
  ObjectStoreDestination,
  PostgresDestination,
  SnowflakeDestination,
} from '@tapyard/destinations';
import { IngestionRunner } from '@tapyard/ingestion';
import { STAGING_PREFIX, Staging } from '@tapyard/intake';
import { ObjectStore } from '@tapyard/objectstore';
import { IngestPayload } from '@tapyard/queue';
import { TestApi, TestWorker, startApi, startWorker } from './apps';
import { uniqueEnvironment } from './env';
import { RollupAnswer, upload, waitForJob } from './ingest';
import { CONTRACT_FIXTURES, OpenFixture, Row, fixtureFor } from './destination-contract';

/**
 * The contract every registered destination keeps, run against each one with the real API and
 * worker: loads typed rows exactly once, redelivery writes nothing, new CSV columns reach the target,
 * rejects are kept with their reasons, an outage is retried (or ends naming the service), and
 * deleteData removes what the pipeline created. A loader registered without a fixture fails.
 *
 * The loaders are shared between two files (test/destination-contract*.e2e-spec.ts), which Jest runs
 * on two workers at once: one file for every loader took some 145 s, more than a third of the whole
 * suite's goal, and so bounded its wall time by itself.
 */

const BASE = ['id', 'label', 'amount'];
const FIELDS = [
  { name: 'id', type: 'int' },
  { name: 'label', type: 'string' },
  { name: 'amount', type: 'double' },
];
/**
 * Outages: two deliveries, far enough apart for a test to restore the service in between; a request
 * to a cut peer gives up after 10 s (30 s by default), still far above any request to these
 * loopback peers, so that an outage costs the suite seconds rather than minutes.
 */
const RETRY = { LOAD_RETRY_ATTEMPTS: '2', LOAD_RETRY_DELAY_MS: '1500', SINK_REQUEST_TIMEOUT_MS: '10000' };
/** How a loader words a request bound that ran out (SINK_REQUEST_TIMEOUT_MS, a driver's own). */
const TIMED_OUT = /within \d+ ?ms|timed? ?out/i;

/** Row i: a quoted label with a comma now and then, and a null amount every 7th row. */
function row(i: number): Row {
  return { id: i, label: i % 50 === 0 ? `label, ${i}` : `label ${i}`, amount: i % 7 === 0 ? null : i / 4 };
}
function rows(from: number, to: number): Row[] {
  return Array.from({ length: to - from + 1 }, (_, k) => row(from + k));
}
function csvOf(data: Row[], columns = BASE): string {
  const cell = (v: Row[string]) => {
    const s = v === null ? '' : String(v);
    return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  return `${columns.join(',')}\n${data.map((r) => columns.map((c) => cell(r[c] ?? null)).join(',')).join('\n')}\n`;
}
/**
 * A stage's events: `begin` first, `end` last, progress notes between (how many depends on the
 * machine's speed, so they are allowed, not counted).
 */
function expectBeginToEnd(evs: RollupAnswer['events'], processName: string): void {
  const states = evs.filter((e) => e.processName === processName).map((e) => e.state);
  expect(states[0]).toBe('begin');
  expect(states[states.length - 1]).toBe('end');
  expect(states.slice(1, -1).filter((s) => s !== 'processing')).toEqual([]);
}
const byId = (a: Row, b: Row) => Number(a.id) - Number(b.id);
const sorted = (data: Row[]) => [...data].sort(byId);

async function events(http: TestAgent, token: string): Promise<RollupAnswer['events']> {
  return (await http.get('/api/v1/pipeline/status').query({ pipelinetoken: token }).expect(200))
    .body as RollupAnswer['events'];
}

/** Polls the job's events until one matches (an outage's retry note, say). */
async function waitForEvent(
  http: TestAgent,
  token: string,
  match: (e: RollupAnswer['events'][number]) => boolean,
  timeoutMs = 60_000,
): Promise<void> {
  const start = Date.now();
  for (;;) {
    if ((await events(http, token)).some(match)) return;
    if (Date.now() - start > timeoutMs) {
      throw new Error(`no such event for ${token}: ${JSON.stringify(await events(http, token))}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function rollupOf(http: TestAgent, token: string): Promise<RollupAnswer> {
  return (
    await http.get('/api/v1/pipeline/status').query({ pipelinetoken: token, withrollup: 'true' }).expect(200)
  ).body as RollupAnswer;
}

/**
 * A redelivery of a job, as BullMQ makes it when the worker died after its loads committed and before
 * it recorded the job's end (a job that ended is never run again): its terminal event forgotten, the
 * same payload, its input staged again (the first delivery removed it), run by the worker's own
 * runner. Returns the staged input's id.
 */
async function redeliver(worker: TestWorker, payload: Omit<IngestPayload, 'staged'>, bytes: string) {
  const db = worker.app.get(DataSource);
  const job = [payload.environment, payload.pipelineToken];
  await db.query(
    `DELETE FROM tapyard.status_events WHERE id = (SELECT max(id) FROM tapyard.status_events
       WHERE environment = $1 AND pipeline_token = $2)`,
    job,
  );
  await db.query(
    `UPDATE tapyard.jobs SET ended_at = NULL, status = 'processing' WHERE environment = $1 AND pipeline_token = $2`,
    job,
  );
  const staged = `${payload.pipelineToken}-again`;
  await worker.app.get(Staging).write(payload.environment, staged, Readable.from([Buffer.from(bytes)]));
  await worker.app.get(IngestionRunner).run({ ...payload, staged }, { made: 0, max: 1 });
  return staged;
}

/** The objects left of a staged input. */
async function stagedObjects(worker: TestWorker, environment: string, id: string): Promise<string[]> {
  const store = worker.app.get(ObjectStore);
  const objects = await store.list(await store.bucket(environment, 'staged'), `${STAGING_PREFIX}${id}/`);
  return objects.map((o) => o.key);
}

/** Every registered loader (a plug-in without one, the vector stores, has its own contract suite). */
export const REGISTERED_LOADERS: readonly Type<Destination>[] = DESTINATION_PLUGINS.flatMap((p) =>
  p.loader ? [p.loader] : [],
);

/**
 * The loaders test/destination-contract.e2e-spec.ts runs (the databases and the object store, with the
 * two-destination case); test/destination-contract-sinks.e2e-spec.ts runs every other registered one
 * (the sinks), so a loader registered later is never left out. The two files take about as long.
 */
const FIRST_FILE: readonly Type<Destination>[] = [
  PostgresDestination,
  MongoDbDestination,
  ObjectStoreDestination,
  SnowflakeDestination,
];

/** The registered loaders of one of the two contract files, in registration order. */
export function contractShare(file: 'first' | 'second'): Type<Destination>[] {
  return REGISTERED_LOADERS.filter((l) => FIRST_FILE.includes(l) === (file === 'first'));
}

/** The contract, one describe per loader. */
export function describeDestinationContract(loaders: readonly Type<Destination>[]): void {
  for (const loader of loaders) {
    const fixture = CONTRACT_FIXTURES.get(loader);
    if (!fixture) {
      describe(`destination contract: ${loader.name}`, () => {
        it('has a contract fixture', () => {
          fixtureFor(loader);
        });
      });
      continue;
    }

    describe(`destination contract: ${loader.name}`, () => {
      const env = uniqueEnvironment('ct');
      let fx: OpenFixture;
      let api: TestApi;
      let worker: TestWorker;
      let dest: Destination;
      const jobs: string[] = [];
      const first = { token: '', csv: csvOf(rows(1, 300)) };

      const pipeline = (name: string) => ({
        name,
        source: {
          fileAttributes: { csvAttributes: { delimiter: ',', header: true } },
          schemaProperties: { fields: FIELDS },
        },
        destination: fx.destination(name),
      });
      /** What the runner hands probe(): the stored pipeline's destination. */
      const probeTarget = async (name: string) => ({
        environment: env,
        pipeline: name,
        destination: (await api.http.get('/api/v1/pipeline').query({ pipeline: name }).expect(200)).body
          .destination,
        columns: [],
        pipelineToken: 'probe',
      });
      const loaderStates = (evs: RollupAnswer['events']) =>
        evs.filter((e) => e.processName === dest.processName).map((e) => e.state);

      beforeAll(async () => {
        fx = await fixture.open(env);
        api = await startApi({ TAPYARD_ENV: env, ...RETRY, ...fx.apiEnv });
        for (const [name, fields] of Object.entries(fx.secrets ?? {})) {
          await api.http.put(`/api/v1/secrets/${name}`).send(fields).expect(200);
        }
        worker = await startWorker({ TAPYARD_ENV: env, ...RETRY, STATUS_PROGRESS_MS: '50', ...fx.workerEnv });
        dest = worker.app.get(loader);
        for (const name of ['main', 'rej', 'mid_a', 'mid_b']) {
          await api.http.post('/api/v1/pipeline').send(pipeline(name)).expect(200);
        }
      });
      afterAll(async () => {
        await worker?.close();
        await api?.close();
        await fx?.close();
      });

      it('load: every row once, typed, with begin and end events of the loader', async () => {
        first.token = await upload(api.http, 'main', first.csv, 'first.csv');
        jobs.push(first.token);
        const { rollup, events: evs } = await waitForJob(api.http, first.token);
        expect(rollup.status).toBe('success');
        expectBeginToEnd(evs, dest.processName);
        expect(sorted(await fx.rows('main', BASE))).toEqual(rows(1, 300));
      });

      it('reload the same job: nothing duplicated, the loader says it was already loaded', async () => {
        const staged = await redeliver(
          worker,
          {
            environment: env,
            pipeline: 'main',
            pipelineToken: first.token,
            publisherToken: null,
            filename: 'first.csv',
          },
          first.csv,
        );
        const { rollup, events: evs } = await rollupOf(api.http, first.token);
        expect(rollup.status).toBe('success');
        const ends = evs.filter((e) => e.processName === dest.processName && e.state === 'end');
        expect(ends).toHaveLength(2);
        expect(ends[1].description).toMatch(/already loaded by an earlier delivery: 300 rows/);
        expect(sorted(await fx.rows('main', BASE))).toEqual(rows(1, 300));
        expect(await stagedObjects(worker, env, staged)).toEqual([]);
      });

      it('a second job: both jobs’ rows, nothing lost', async () => {
        const token = await upload(api.http, 'main', csvOf(rows(301, 450)), 'second.csv');
        jobs.push(token);
        expect((await waitForJob(api.http, token)).rollup.status).toBe('success');
        expect(sorted(await fx.rows('main', BASE))).toEqual(rows(1, 450));
      });

      it('new columns: an extra CSV column joins the pipeline as string and reaches the destination', async () => {
        const added = rows(451, 500).map((r) => ({ ...r, note: `note ${r.id}` }));
        const token = await upload(api.http, 'main', csvOf(added, [...BASE, 'note']), 'third.csv');
        jobs.push(token);
        // Schema contract `evolve` (the default): the job says which columns it added.
        expect((await waitForJob(api.http, token)).rollup.status).toBe('warning');
        const def = (await api.http.get('/api/v1/pipeline').query({ pipeline: 'main' }).expect(200)).body as {
          source: { schemaProperties: { fields: { name: string; type: string }[] } };
        };
        expect(def.source.schemaProperties.fields).toEqual([...FIELDS, { name: 'note', type: 'string' }]);
        expect(sorted(await fx.rows('main', [...BASE, 'note']))).toEqual([
          ...rows(1, 450).map((r) => ({ ...r, note: null })),
          ...added,
        ]);
      });

      it('rejects: good rows load, each bad one is kept with a reason naming its column', async () => {
        const good = rows(1, 20);
        // Line numbers count the header as line 1.
        const text = csvOf(good)
          .replace(/^5,/m, 'abc,')
          .replace(/^12,/m, '1x2,')
          .replace(/^(8,label 8,)2$/m, '$1lots');
        const token = await upload(api.http, 'rej', text, 'bad.csv');
        const { rollup } = await waitForJob(api.http, token);
        expect(rollup.status).toBe('warning');
        expect(sorted(await fx.rows('rej', BASE))).toEqual(
          good.filter((r) => ![5, 8, 12].includes(Number(r.id))),
        );
        const kept = [...(await fx.rejects('rej'))].sort((a, b) => a.line - b.line);
        expect(kept.map((r) => r.line)).toEqual([6, 9, 13]);
        expect(kept[0].reason).toMatch(/\bid\b/);
        expect(kept[1].reason).toMatch(/\bamount\b/);
        expect(kept[2].reason).toMatch(/\bid\b/);
      });

      it('down mid-job, restored before the last delivery: retried, every row exactly once', async () => {
        const data = rows(1, 10_000);
        // The relay cuts by itself once the load's rows are on the wire: inside the load on any machine.
        fx.relay.cutAfter(fixture.tripBytes);
        const token = await upload(api.http, 'mid_a', csvOf(data), 'mid.csv');
        try {
          await waitForEvent(
            api.http,
            token,
            (e) => e.processName === dest.processName && /will retry \(delivery 1 of 2\)/.test(e.description),
          );
        } finally {
          fx.relay.restore();
        }
        const { rollup, events: evs } = await waitForJob(api.http, token);
        expect(rollup.status).toBe('success');
        expect(loaderStates(evs).filter((s) => s === 'end')).toHaveLength(1);
        const loaded = await fx.rows('mid_a', BASE);
        expect(loaded).toHaveLength(data.length);
        expect(sorted(loaded)).toEqual(data);
      });

      it('down for good: the job ends error, named after the loader and the service', async () => {
        fx.relay.cut();
        try {
          // probe() is the plug-in's availability check: down, it names the service, and says what the
          // peer did (it closes every connection), not that a bound ran out: a driver retrying on its own
          // behind the bound (Snowflake's login did, for minutes) hides the outage and outlives the job.
          const refused: unknown = await dest.probe(await probeTarget('mid_b')).then(
            () => null,
            (err: unknown) => err,
          );
          expect(String(refused)).toMatch(fixture.service);
          expect(String(refused)).not.toMatch(TIMED_OUT);
          const token = await upload(api.http, 'mid_b', csvOf(rows(1, 50)), 'never.csv');
          const { rollup, events: evs } = await waitForJob(api.http, token);
          expect(rollup.status).toBe('error');
          expect(
            evs.some(
              (e) =>
                e.processName === dest.processName && /will retry \(delivery 1 of 2\)/.test(e.description),
            ),
          ).toBe(true);
          // One error event, the job's last: from the loader, naming the service.
          expect(evs.filter((e) => e.state === 'error').map((e) => e.processName)).toEqual([
            dest.processName,
          ]);
          expect(rollup.jobs[0].lastError?.processName).toBe(dest.processName);
          expect(rollup.jobs[0].lastError?.description).toMatch(fixture.service);
          expect(rollup.jobs[0].lastError?.description).not.toMatch(TIMED_OUT);
        } finally {
          fx.relay.restore();
        }
        await expect(dest.probe(await probeTarget('mid_b'))).resolves.toBeUndefined();
        expect(await fx.present('mid_b')).toEqual([]);
      });

      it('deleteData: what the pipeline created is gone, and the answer lists it', async () => {
        const before = await fx.present('main');
        expect(before.length).toBeGreaterThan(0);
        const res = await api.http
          .delete('/api/v1/pipeline')
          .query({ pipeline: 'main', deleteData: 'true' })
          .expect(200);
        const body = res.body as { dataDeleted: boolean; dropped: string[] };
        expect(body.dataDeleted).toBe(true);
        expect(body.dropped).toEqual(fx.dropped('main', jobs).sort());
        // A sink cannot take back what it delivered: that stays with the receiver.
        expect(await fx.present('main')).toEqual(dest.capabilities.retractable ? [] : before);
        await api.http.get('/api/v1/pipeline').query({ pipeline: 'main' }).expect(404);
      });
    });
  }
}

/**
 * The multi-destination acceptance test: one job loads into PostgreSQL and the object store; with
 * the store down PostgreSQL still commits (warning), and a redelivery loads only the store.
 */
export function describeTwoDestinations(): void {
  describe('destination contract: one job, two destinations', () => {
    const env = uniqueEnvironment('ct2');
    let pg: OpenFixture;
    let os: OpenFixture;
    let api: TestApi;
    let worker: TestWorker;

    beforeAll(async () => {
      pg = await fixtureFor(PostgresDestination).open(env);
      os = await fixtureFor(ObjectStoreDestination).open(env);
      const flags = { TAPYARD_ENV: env, LOAD_RETRY_ATTEMPTS: '1' };
      api = await startApi({ ...flags, ...os.apiEnv });
      worker = await startWorker({ ...flags, ...os.workerEnv });
      await api.http
        .post('/api/v1/pipeline')
        .send({
          name: 'both',
          source: {
            fileAttributes: { csvAttributes: { delimiter: ',', header: true } },
            schemaProperties: { fields: FIELDS },
          },
          destination: { ...pg.destination('both'), ...os.destination('both') },
        })
        .expect(200);
    });
    afterAll(async () => {
      await worker?.close();
      await api?.close();
      await os?.close();
      await pg?.close();
    });

    it('one upload loads into both, with events of both loaders under its token', async () => {
      const token = await upload(api.http, 'both', csvOf(rows(1, 100)), 'one.csv');
      const { rollup, events: evs } = await waitForJob(api.http, token);
      expect(rollup.status).toBe('success');
      expectBeginToEnd(evs, 'PostgresLoader');
      expectBeginToEnd(evs, 'SparkObjectStoreLoader');
      expect(sorted(await pg.rows('both', BASE))).toEqual(rows(1, 100));
      expect(sorted(await os.rows('both', BASE))).toEqual(rows(1, 100));
    });

    it('with the store down PostgreSQL commits (warning); a redelivery then loads only the store', async () => {
      const text = csvOf(rows(101, 200));
      os.relay.cut();
      const token = await upload(api.http, 'both', text, 'two.csv');
      try {
        const { rollup, events: evs } = await waitForJob(api.http, token);
        expect(rollup.status).toBe('warning');
        expect(rollup.jobs[0].lastError).toBeNull();
        const failed = evs.filter((e) => e.processName === 'SparkObjectStoreLoader' && e.state === 'error');
        expect(failed).toHaveLength(1);
        expect(failed[0].description).toMatch(/object ?store/i);
        expect(evs.some((e) => e.processName === 'PostgresLoader' && e.state === 'end')).toBe(true);
        expect(sorted(await pg.rows('both', BASE))).toEqual(rows(1, 200));
      } finally {
        os.relay.restore();
      }
      expect((await os.present('both')).filter((k) => k.includes(`job=${token}/`))).toEqual([]);

      await redeliver(
        worker,
        {
          environment: env,
          pipeline: 'both',
          pipelineToken: token,
          publisherToken: null,
          filename: 'two.csv',
        },
        text,
      );
      const { rollup, events: evs } = await rollupOf(api.http, token);
      expect(rollup.status).toBe('success');
      const pgEnds = evs.filter((e) => e.processName === 'PostgresLoader' && e.state === 'end');
      expect(pgEnds.map((e) => /already loaded by an earlier delivery/.test(e.description))).toEqual([
        false,
        true,
      ]);
      const osEnds = evs.filter((e) => e.processName === 'SparkObjectStoreLoader' && e.state === 'end');
      expect(osEnds).toHaveLength(1);
      expect(osEnds[0].description).toMatch(/^loaded 100 rows/);
      expect(sorted(await pg.rows('both', BASE))).toEqual(rows(1, 200));
      expect(
        (await os.present('both')).filter((k) => k.includes(`job=${token}/`)).map((k) => k.split('/').pop()),
      ).toEqual(['_SUCCESS', 'part-00000.parquet']);
      expect(sorted(await os.rows('both', BASE))).toEqual(rows(1, 200));
    });
  });
}
