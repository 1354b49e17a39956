import { Client } from 'pg';
import { CONFIG, ServiceUnavailableError, TapyardConfig } from '@tapyard/core';
import {
  CreatedObjects,
  CsvChunkPayload,
  PgPools,
  PostgresDestination,
  rejectsTable,
} from '@tapyard/destinations';
import { encodeRows } from './support/destinations';
import { TestApi, startApi } from './support/apps';
import { TEST_DATABASE_URL, testEnv, uniqueEnvironment } from './support/env';
import { csvPipeline, upload, waitForJob } from './support/ingest';
import { spawnApp } from './support/processes';
import { expectSecondDeliveryWritesNothing } from './support/destinations';

/** At-least-once delivery, exactly-once effect. */
describe('exactly-once loads', () => {
  const env = uniqueEnvironment('once');
  const table = `once_${env.replace(/[^a-z0-9]/g, '_')}`;
  let api: TestApi;
  let pg: Client;

  beforeAll(async () => {
    api = await startApi({ TAPYARD_ENV: env });
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    await api.http
      .post('/api/v1/pipeline')
      .send(
        csvPipeline('once', table, [
          ['id', 'int'],
          ['label', 'string'],
          ['amount', 'double'],
        ]),
      )
      .expect(200);
  });
  afterAll(async () => {
    await pg.end();
    await api.close();
  });

  /** The pipeline's PostgreSQL target, as a job of `pipelineToken` loads it. */
  const targetOf = (pipelineToken: string) => ({
    environment: env,
    pipeline: 'once',
    destination: { database: { dbName: 'tapyard_test', schema: 'ingest_test', table, usePostgres: true } },
    columns: [
      { name: 'id', type: 'int' as const },
      { name: 'label', type: 'string' as const },
      { name: 'amount', type: 'double' as const },
    ],
    pipelineToken,
  });

  /** Every message the loader sends on its connections to the target database during `fn`, as sent. */
  async function sentDuring(fn: () => Promise<void>): Promise<string[]> {
    const pool = api.app.get(PgPools).get('tapyard_test');
    const sent: string[] = [];
    const counted = new Set<unknown>();
    const restores: (() => void)[] = [];
    const onAcquire = (client: { query: (...args: unknown[]) => unknown }) => {
      if (counted.has(client)) return;
      counted.add(client);
      const query = client.query;
      client.query = function (this: unknown, ...args: unknown[]) {
        const q = args[0];
        sent.push(typeof q === 'string' ? q : ((q as { text?: string }).text ?? 'COPY'));
        return query.apply(this, args);
      };
      restores.push(() => {
        client.query = query;
      });
    };
    pool.on('acquire', onAcquire as never);
    try {
      await fn();
    } finally {
      pool.off('acquire', onAcquire as never);
      for (const restore of restores) restore();
    }
    return sent;
  }

  it('a worker killed in the middle of a load leaves each row exactly once after another takes over', async () => {
    const rows = 600_000;
    let csv = 'id,label,amount\n';
    for (let i = 1; i <= rows; i++) csv += `${i},row ${i},${i / 4}\n`;
    const workerEnv = testEnv({ TAPYARD_ENV: env, WORKER_LOCK_MS: '2000' });

    // The worker starts once the upload is answered: a job started while the file still arrived could
    // have loaded most of it by then, and the poll below would see its loader too late.
    const token = await upload(api.http, 'once', csv, 'big.csv');
    const first = spawnApp('worker', workerEnv);
    await first.waitFor(/Tapyard worker ready/);
    // Wait until the loader is writing, then kill the worker without warning.
    for (;;) {
      const events = (
        await api.http.get('/api/v1/pipeline/status').query({ pipelinetoken: token }).expect(200)
      ).body;
      if (events.some((e: { processName: string }) => e.processName === 'PostgresLoader')) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    // At once: with two COPY streams the 600,000 rows could be loaded within a further 150 ms.
    first.child.kill('SIGKILL');
    await first.exited;
    const mid = (
      await api.http
        .get('/api/v1/pipeline/status')
        .query({ pipelinetoken: token, withrollup: 'true' })
        .expect(200)
    ).body;
    expect(mid.rollup.allDone).toBe(false);
    expect(Number((await pg.query(`SELECT count(*) FROM ingest_test."${table}"`)).rows[0].count)).toBe(0);

    const second = spawnApp('worker', workerEnv);
    try {
      const { rollup } = await waitForJob(api.http, token, 90000);
      expect(rollup.status).toBe('success');
      const counts = (
        await pg.query(
          `SELECT count(*) AS n, count(DISTINCT id) AS d, min(id) AS lo, max(id) AS hi FROM ingest_test."${table}"`,
        )
      ).rows[0];
      expect(counts).toEqual({ n: String(rows), d: String(rows), lo: 1, hi: rows });
      const ledger = await pg.query(`SELECT rows_loaded FROM tapyard_meta.loads WHERE pipeline_token = $1`, [
        token,
      ]);
      expect(ledger.rows).toEqual([{ rows_loaded: String(rows) }]);
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
    }
  }, 120000);

  it('a second delivery of a committed job writes nothing', async () => {
    const dest = api.app.get(PostgresDestination);
    const target = targetOf(`redelivered-${env}`);
    await dest.prepare(target);
    const before = Number((await pg.query(`SELECT count(*) FROM ingest_test."${table}"`)).rows[0].count);
    await expectSecondDeliveryWritesNothing(dest, target, [
      [1000001, 'again', 1.5],
      [1000002, 'again', 2.5],
    ]);
    expect(Number((await pg.query(`SELECT count(*) FROM ingest_test."${table}"`)).rows[0].count)).toBe(
      before + 2,
    );
  });
  it('a small job costs its loader few round trips: no probe query, one ledger check, then one message: the claim, its COPY, the counts and the COMMIT', async () => {
    const dest = api.app.get(PostgresDestination);
    const target = targetOf(`trips-${env}`);
    await dest.prepare(target);
    const rows = [
      [2000001, 'few', 1.5],
      [2000002, 'trips', 2.5],
    ];
    const sent = await sentDuring(async () => {
      await dest.probe(target);
      expect(await dest.committed(target)).toBeNull();
      const clean = await dest.load(
        target,
        (async function* () {
          yield encodeRows(dest, target, rows);
        })(),
        async function* () {},
        () => undefined,
      );
      expect(clean).toMatchObject({ loaded: 2, rejected: 0, alreadyLoaded: false });
    });
    // Was ten: the probe's query, two for the ledger check, then BEGIN, SET, the claim, COPY, an empty
    // COPY of rejects, UPDATE and COMMIT each on its own. Then four: the claim, COPY and its data were
    // three round trips, then one message. Now the counts and the COMMIT go in it too (nothing rejected).
    expect(sent).toHaveLength(2);
    expect(sent[1]).toMatch(
      /^BEGIN;[^]*INSERT INTO tapyard_meta\.loads[^]*; COPY "ingest_test"\.[^]*; UPDATE tapyard_meta\.loads SET rows_loaded = 2, rows_rejected = 0 [^]*; COMMIT$/,
    );
    expect(
      (
        await pg.query(
          `SELECT rows_loaded, rows_rejected FROM tapyard_meta.loads WHERE pipeline_token = $1`,
          [target.pipelineToken],
        )
      ).rows,
    ).toEqual([{ rows_loaded: '2', rows_rejected: '0' }]);
    expect(await dest.committed(target)).toMatchObject({ loaded: 2, rejected: 0, alreadyLoaded: true });

    // A job with rejected rows still writes them, in the same transaction: the COPY of rejects between
    // the one message and the counts with the COMMIT.
    const withRejects = { ...target, pipelineToken: `trips-rejects-${env}` };
    let result: unknown;
    const sentWithRejects = await sentDuring(async () => {
      result = await dest.load(
        withRejects,
        (async function* () {
          yield encodeRows(dest, withRejects, [[2000003, 'kept', 3.5]]);
        })(),
        async function* () {
          yield { line: 3, stage: 'DataQuality', reason: 'not a number', raw: 'x,y,z' };
        },
        () => undefined,
      );
    });
    expect(result).toMatchObject({ loaded: 1, rejected: 1, alreadyLoaded: false });
    expect(sentWithRejects).toHaveLength(3);
    expect(sentWithRejects[0]).not.toMatch(/COMMIT/);
    expect(sentWithRejects[2]).toMatch(
      /^UPDATE tapyard_meta\.loads SET rows_loaded = 1, rows_rejected = 1 [^]*COMMIT$/,
    );
    expect(
      (
        await pg.query(
          `SELECT line, reason FROM ingest_test."${rejectsTable(table)}" WHERE pipeline_token = $1`,
          [withRejects.pipelineToken],
        )
      ).rows,
    ).toEqual([{ line: '3', reason: 'not a number' }]);
  });

  it('a small input carried in its job skips the ledger check: its load claims and answers a committed delivery itself', async () => {
    const dest = api.app.get(PostgresDestination);
    const carried = { ...targetOf(`carried-${env}`), carriedBytes: 40 };
    await dest.prepare(carried);
    const load = () =>
      dest.load(
        carried,
        (async function* () {
          yield encodeRows(dest, carried, [
            [-5000001, 'carried', 1.5],
            [-5000002, 'carried', 2.5],
          ]);
        })(),
        async function* () {},
        () => undefined,
      );
    // No message before the load's own: the check answers without looking.
    let first: Awaited<ReturnType<typeof load>> | null = null;
    const sent = await sentDuring(async () => {
      expect(await dest.committed(carried)).toBeNull();
      first = await load();
    });
    expect(first).toMatchObject({ loaded: 2, alreadyLoaded: false });
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(/^BEGIN;[^]*INSERT INTO tapyard_meta\.loads[^]*; COMMIT$/);
    // A redelivery after the commit: still no check, and the load's claim finds the committed one.
    expect(await dest.committed(carried)).toBeNull();
    await expect(load()).resolves.toMatchObject({ loaded: 2, rejected: 0, alreadyLoaded: true });
    const n = await pg.query(`SELECT count(*)::int AS n FROM ingest_test."${table}" WHERE id <= -5000001`);
    expect(n.rows).toEqual([{ n: 2 }]);
    // The same job without a carried input (or one whose COPY could open further streams) looks.
    const { carriedBytes: _bytes, ...staged } = carried;
    expect(await dest.committed(staged)).toMatchObject({ loaded: 2, alreadyLoaded: true });
    const config = api.app.get<TapyardConfig>(CONFIG);
    const streaming = new PostgresDestination(
      { ...config, database: { ...config.database, copyStreams: 2, copyStreamMinBytes: 16 * 40 } },
      api.app.get(PgPools),
      api.app.get(CreatedObjects),
    );
    expect(await streaming.committed(carried)).toMatchObject({ loaded: 2, alreadyLoaded: true });
  });

  it("commits a small load's counts in its one message as PostgreSQL took the rows, should a payload miscount them", async () => {
    const dest = api.app.get(PostgresDestination);
    const target = targetOf(`miscounted-${env}`);
    await dest.prepare(target);
    // A clean CSV chunk that says 3 records where its bytes hold 2.
    const chunk: CsvChunkPayload = {
      kind: 'csv',
      bytes: Buffer.from('-6000001,x,1.5\n-6000002,y,2.5\n'),
      rows: 3,
      line: 2,
      eol: 'lf',
      copyOptions: `FORMAT csv, DELIMITER ',', QUOTE '"', ESCAPE '"'`,
      columns: ['id', 'label', 'amount'],
    };
    const result = await dest.load(
      target,
      (async function* () {
        yield chunk;
      })(),
      async function* () {},
      () => undefined,
    );
    expect(result).toMatchObject({ loaded: 2, rejected: 0, alreadyLoaded: false });
    const ledger = await pg.query(`SELECT rows_loaded FROM tapyard_meta.loads WHERE pipeline_token = $1`, [
      target.pipelineToken,
    ]);
    expect(ledger.rows).toEqual([{ rows_loaded: '2' }]);
  });

  it('a small load PostgreSQL refuses in its one message leaves no ledger row, and the connection serves the next', async () => {
    const dest = api.app.get(PostgresDestination);
    const target = targetOf(`refused-${env}`);
    await dest.prepare(target);
    const load = (payload: string) =>
      dest.load(
        target,
        (async function* () {
          yield payload;
        })(),
        async function* () {},
        () => undefined,
      );
    // COPY text with a value the int column refuses: PostgreSQL's own error, the claim rolled back.
    await expect(load('3000001\tfine\t1.5\nnot-a-number\tbad\t2.5\n')).rejects.toMatchObject({
      code: '22P02',
    });
    const ledger = () =>
      pg.query(`SELECT rows_loaded FROM tapyard_meta.loads WHERE pipeline_token = $1`, [
        target.pipelineToken,
      ]);
    expect((await ledger()).rows).toEqual([]);
    // The same job again (a retry), on the pool's connections: claimed afresh, loaded once.
    await expect(load('3000001\tfine\t1.5\n3000002\talso\t2.5\n')).resolves.toMatchObject({
      loaded: 2,
      alreadyLoaded: false,
    });
    expect((await ledger()).rows).toEqual([{ rows_loaded: '2' }]);
    const ids = await pg.query(`SELECT id FROM ingest_test."${table}" WHERE id >= 3000001 ORDER BY id`);
    expect(ids.rows).toEqual([{ id: 3000001 }, { id: 3000002 }]);
  });

  it('two deliveries of one small job at once load it once: the second claim waits for the first, then answers its counts', async () => {
    const dest = api.app.get(PostgresDestination);
    const target = targetOf(`twice-${env}`);
    await dest.prepare(target);
    const load = () =>
      dest.load(
        target,
        (async function* () {
          yield '4000001\ttwice\t1.5\n4000002\ttwice\t2.5\n4000003\ttwice\t3.5\n';
        })(),
        async function* () {},
        () => undefined,
      );
    const results = await Promise.all([load(), load(), load()]);
    expect(results.map((r) => [r.loaded, r.alreadyLoaded]).sort()).toEqual([
      [3, false],
      [3, true],
      [3, true],
    ]);
    const n = await pg.query(`SELECT count(*)::int AS n FROM ingest_test."${table}" WHERE id >= 4000001`);
    expect(n.rows).toEqual([{ n: 3 }]);
  });

  it("a table found ready is not looked at by the next job's preparation; a small load makes one dropped meanwhile again, a larger one fails as an outage and its retry does", async () => {
    const dest = api.app.get(PostgresDestination);
    const own = `${table}_ready`;
    const at = (pipelineToken: string, extra: { name: string; type: 'int' }[] = []) => {
      const t = targetOf(pipelineToken);
      return {
        ...t,
        destination: { database: { ...t.destination.database, table: own } },
        columns: [...t.columns, ...extra],
      };
    };
    /** `rows` rows of COPY text: one message up to 256 KiB, streamed past it. */
    const load = (t: ReturnType<typeof at>, rows = 1) =>
      dest.load(
        t,
        (async function* () {
          yield (t.columns.map((_, k) => String(k + 1)).join('\t') + '\n').repeat(rows);
        })(),
        async function* () {},
        () => undefined,
      );
    const first = at(`ready-1-${env}`);
    await dest.prepare(first);
    await expect(load(first)).resolves.toMatchObject({ loaded: 1 });
    // The next job of the table: no query at all before its load.
    const second = at(`ready-2-${env}`);
    expect(await sentDuring(() => dest.prepare(second).then(() => undefined))).toEqual([]);
    await expect(load(second)).resolves.toMatchObject({ loaded: 1 });
    // Dropped behind the platform's back: a small load's one message fails, the table is made again and
    // the same message goes once more.
    await pg.query(`DROP TABLE ingest_test."${own}"`);
    const third = at(`ready-3-${env}`);
    expect(await sentDuring(() => dest.prepare(third).then(() => undefined))).toEqual([]);
    const repaired = await sentDuring(() =>
      expect(load(third)).resolves.toMatchObject({ loaded: 1, alreadyLoaded: false }),
    );
    expect(repaired.some((q) => q.startsWith(`CREATE TABLE "ingest_test"."${own}" (`))).toBe(true);
    expect(repaired.filter((q) => q.startsWith('BEGIN;'))).toHaveLength(2);
    // A larger load fails as an outage (its job is retried) ...
    await pg.query(`DROP TABLE ingest_test."${own}_rejects"`);
    await pg.query(`ALTER TABLE ingest_test."${own}" DROP COLUMN label`);
    const large = at(`ready-4-${env}`);
    expect(await sentDuring(() => dest.prepare(large).then(() => undefined))).toEqual([]);
    const failed = await load(large, 60_000).catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(ServiceUnavailableError);
    expect((failed as Error).message).toMatch(
      /changed after an earlier load found them ready .*; the load is retried/,
    );
    // ... whose retry looks at the tables again and makes what is missing.
    const again = await sentDuring(() => dest.prepare(large).then(() => undefined));
    expect(again.some((q) => q.startsWith(`CREATE TABLE "ingest_test"."${own}_rejects" (`))).toBe(true);
    expect(
      again.some((q) => q.startsWith(`ALTER TABLE "ingest_test"."${own}" ADD COLUMN IF NOT EXISTS "label"`)),
    ).toBe(true);
    await expect(load(large, 60_000)).resolves.toMatchObject({ loaded: 60_000, alreadyLoaded: false });
    // A job with a column the table has not got looks (and adds it); the shorter jobs' shape still holds.
    const wider = at(`ready-5-${env}`, [{ name: 'extra', type: 'int' }]);
    const widened = await sentDuring(() => dest.prepare(wider).then(() => undefined));
    expect(widened.some((q) => /ALTER TABLE[^]*ADD COLUMN IF NOT EXISTS "extra"/.test(q))).toBe(true);
    await expect(load(wider)).resolves.toMatchObject({ loaded: 1 });
    expect(await sentDuring(() => dest.prepare(at(`ready-6-${env}`)).then(() => undefined))).toEqual([]);
    const n = await pg.query(
      `SELECT count(*)::int AS n, count(extra)::int AS extra FROM ingest_test."${own}"`,
    );
    expect(n.rows).toEqual([{ n: 60_002, extra: 1 }]);
  });

  it("a scoped caller's pipeline looks at its tables before every load, however often they were found ready", async () => {
    const dest = api.app.get(PostgresDestination);
    const scoped = (pipelineToken: string) => {
      const t = targetOf(pipelineToken);
      return {
        ...t,
        destination: { database: { ...t.destination.database, table: `${table}_scoped` } },
        mayAdopt: false,
      };
    };
    await dest.prepare(scoped(`scoped-1-${env}`));
    for (const n of [2, 3]) {
      const sent = await sentDuring(() => dest.prepare(scoped(`scoped-${n}-${env}`)).then(() => undefined));
      // The claim check (the tables are a pipeline's own) and the table check, each time.
      expect(sent.some((q) => q.includes('obj_description'))).toBe(true);
      expect(sent.some((q) => q.includes("to_regclass('tapyard_meta.loads')"))).toBe(true);
    }
  });

  it('a database no job loaded yet has no ledger: nothing committed there', async () => {
    const dest = api.app.get(PostgresDestination);
    // The server's maintenance database: no pipeline may load there, so it never has the ledger.
    const pool = api.app.get(PgPools).get('postgres');
    const { rows } = await pool.query<{ present: boolean }>(
      `SELECT to_regclass('tapyard_meta.loads') IS NOT NULL AS present`,
    );
    expect(rows).toEqual([{ present: false }]);
    expect(
      await dest.committed({
        environment: env,
        pipeline: 'once',
        destination: { database: { dbName: 'postgres', schema: 'ingest_test', table, usePostgres: true } },
        columns: [],
        pipelineToken: `fresh-${env}`,
      }),
    ).toBeNull();
  });
});
