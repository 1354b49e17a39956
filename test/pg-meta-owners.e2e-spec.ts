import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { loadConfig } from '@tapyard/core';
import { PipelineDefinition } from '@tapyard/model';
import { CsvChunkPayload, LoadTarget, PgPools, PostgresDestination } from '@tapyard/destinations';
import type { CreatedObjects } from '@tapyard/destinations';
import { testEnv } from './support/env';
import { PrivatePostgres, startPrivatePostgres } from './support/private-postgres';

/**
 * Every load runs what sits in tapyard_meta: it inserts into the ledger (a trigger there would fire)
 * and new tables default their load id to tapyard_meta.load_id(). A database role with CREATE on a
 * target database that made these first would run its code as the loading role on every load; the
 * loader refuses them unless they belong to the loading role, a role it belongs to, or a superuser.
 * Against a server of the test's own: the loading role must not be a superuser, and the stranger
 * needs CREATE on databases of its own.
 */
describe('PostgreSQL destinations refuse tapyard_meta objects another role made', () => {
  let server: PrivatePostgres;
  let pools: PgPools;
  let destination: PostgresDestination;
  const admin: Record<string, Client> = {};
  const stranger: Record<string, Client> = {};
  const databases = ['clean', 'planted', 'granted', 'raced', 'member'];

  const roleUrl = (role: string, database: string) => {
    const u = new URL(server.url(database));
    u.username = role;
    u.password = `${role}-pw`;
    return u.toString();
  };

  const target = (database: string, table = 'items'): LoadTarget => ({
    environment: 'owners',
    pipeline: 'owners',
    destination: {
      database: { dbName: database, schema: 'public', table, usePostgres: true },
    } as PipelineDefinition['destination'],
    columns: [
      { name: 'id', type: 'int' },
      { name: 'label', type: 'string' },
    ] as LoadTarget['columns'],
    pipelineToken: randomUUID(),
    loadId: true,
  });

  async function* oneChunk(): AsyncGenerator<CsvChunkPayload> {
    yield {
      kind: 'csv',
      bytes: Buffer.from('1,one\n2,two\n'),
      rows: 2,
      line: 2,
      eol: 'lf',
      copyOptions: 'FORMAT csv',
      columns: ['id', 'label'],
    };
  }
  async function* none<T>(): AsyncGenerator<T> {}

  /** The data and rejects tables, made by the loading role so that `prepare` records nothing. */
  async function tables(database: string): Promise<void> {
    const c = new Client({ connectionString: roleUrl('loader', database) });
    await c.connect();
    await c.query(`CREATE TABLE items (id integer, label text)`);
    await c.query(
      `CREATE TABLE items_rejects (pipeline_token text NOT NULL, line bigint, stage text, reason text,
       raw text, rejected_at timestamptz NOT NULL DEFAULT now())`,
    );
    await c.end();
  }

  const meta = async (database: string) =>
    (
      await admin[database].query<{ schema: string | null; loads: string | null }>(
        `SELECT (SELECT nspowner::regrole::text FROM pg_namespace WHERE nspname = 'tapyard_meta') AS schema,
                (SELECT relowner::regrole::text FROM pg_class WHERE oid = to_regclass('tapyard_meta.loads')) AS loads`,
      )
    ).rows[0];

  beforeAll(async () => {
    server = await startPrivatePostgres({ max_prepared_transactions: '4' });
    const root = new Client({ connectionString: server.url('postgres') });
    await root.connect();
    await root.query(`CREATE ROLE loader LOGIN PASSWORD 'loader-pw'`);
    await root.query(`CREATE ROLE stranger LOGIN PASSWORD 'stranger-pw'`);
    await root.query(`CREATE ROLE platform NOLOGIN`);
    await root.query(`GRANT platform TO loader`);
    for (const d of databases) {
      await root.query(`CREATE DATABASE ${d} OWNER loader`);
      await root.query(`GRANT CREATE ON DATABASE ${d} TO stranger`);
    }
    await root.end();
    for (const d of databases) {
      admin[d] = new Client({ connectionString: server.url(d) });
      stranger[d] = new Client({ connectionString: roleUrl('stranger', d) });
      await admin[d].connect();
      await stranger[d].connect();
    }
    const config = loadConfig(testEnv({ POSTGRES_DESTINATION_URL: roleUrl('loader', 'clean') }));
    pools = new PgPools(config);
    // `prepare` records the tables it creates; these tests make theirs beforehand.
    destination = new PostgresDestination(config, pools, null as unknown as CreatedObjects);
  }, 120_000);

  afterAll(async () => {
    for (const c of [...Object.values(admin), ...Object.values(stranger)]) await c.end();
    await pools?.onModuleDestroy();
    await server?.stop();
  });

  it('loads where the loading role made tapyard_meta itself, and answers redeliveries from its ledger', async () => {
    await tables('clean');
    const t = target('clean');
    expect(await destination.committed(t)).toBeNull();
    await destination.prepare(t);
    expect(await meta('clean')).toEqual({ schema: 'loader', loads: 'loader' });
    expect(await destination.load(t, oneChunk(), none, () => undefined)).toMatchObject({ loaded: 2 });
    expect(await destination.committed(t)).toMatchObject({ loaded: 2, alreadyLoaded: true });
  });

  it('refuses a ledger another role made first, with a trigger that would run as the loading role', async () => {
    await stranger.planted.query(`CREATE SCHEMA tapyard_meta`);
    await stranger.planted.query(`CREATE TABLE tapyard_meta.seen (who text)`);
    await stranger.planted.query(
      `CREATE TABLE tapyard_meta.loads (pipeline_token text PRIMARY KEY, target text NOT NULL,
       rows_loaded bigint, rows_rejected bigint, loaded_at timestamptz NOT NULL DEFAULT now())`,
    );
    await stranger.planted.query(`CREATE FUNCTION tapyard_meta.spy() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO tapyard_meta.seen VALUES (current_user); RETURN NEW; END $$`);
    await stranger.planted.query(
      `CREATE TRIGGER spy BEFORE INSERT ON tapyard_meta.loads FOR EACH ROW EXECUTE FUNCTION tapyard_meta.spy()`,
    );
    await stranger.planted.query(`GRANT ALL ON SCHEMA tapyard_meta TO loader`);
    await stranger.planted.query(`GRANT ALL ON ALL TABLES IN SCHEMA tapyard_meta TO loader`);
    await tables('planted');
    const t = target('planted');
    // Without a load id every table is in place, so `prepare` creates nothing and checks only what is there.
    const ready = { ...t, loadId: false };
    for (const step of [
      () => destination.committed(t),
      () => destination.prepare(t),
      () => destination.prepare(ready),
    ]) {
      await expect(step()).rejects.toMatchObject({
        domainCode: 'destination.load_refused',
        message: expect.stringMatching(
          /database 'planted'.*role 'stranger'.*not to the role Tapyard loads as/,
        ),
      });
    }
    expect((await stranger.planted.query(`SELECT who FROM tapyard_meta.seen`)).rows).toEqual([]);
  });

  it("refuses a load-id function another role put in the loading role's schema before it did", async () => {
    const own = new Client({ connectionString: roleUrl('loader', 'granted') });
    await own.connect();
    await own.query(`CREATE SCHEMA tapyard_meta`);
    await own.query(`GRANT CREATE, USAGE ON SCHEMA tapyard_meta TO stranger`);
    await own.end();
    await stranger.granted.query(
      `CREATE FUNCTION tapyard_meta.load_id() RETURNS uuid LANGUAGE sql AS $$ SELECT gen_random_uuid() $$`,
    );
    await tables('granted');
    await expect(destination.committed(target('granted'))).rejects.toThrow(/role 'stranger'/);
    await expect(destination.prepare(target('granted'))).rejects.toThrow(/role 'stranger'/);
  });

  it('refuses a schema another role made between the redelivery check and the table check, creating nothing', async () => {
    await tables('raced');
    const t = target('raced');
    expect(await destination.committed(t)).toBeNull();
    await stranger.raced.query(`CREATE SCHEMA tapyard_meta`);
    await stranger.raced.query(`GRANT ALL ON SCHEMA tapyard_meta TO loader`);
    await expect(destination.prepare(t)).rejects.toThrow(/database 'raced'.*role 'stranger'/);
    expect(await meta('raced')).toEqual({ schema: 'stranger', loads: null });
  });

  it("the sweep of prepared streams settles every database's but a refused one's, and says which it left", async () => {
    // Streams of loads whose workers died before their decision: no ledger row, so they roll back.
    const orphan = async (database: string) => {
      const gid = `tapyard:${randomUUID()}:1`;
      const c = new Client({ connectionString: roleUrl('loader', database) });
      await c.connect();
      await c.query('BEGIN');
      await c.query(`INSERT INTO items (id, label) VALUES (9, 'nine')`);
      await c.query(`PREPARE TRANSACTION ${c.escapeLiteral(gid)}`);
      await c.end();
      return gid;
    };
    const prepared = async (database: string) =>
      (
        await admin[database].query<{ gid: string }>(
          `SELECT gid FROM pg_prepared_xacts WHERE database = current_database()`,
        )
      ).rows.map((r) => r.gid);
    await orphan('clean');
    const held = await orphan('planted');
    try {
      await expect(destination.sweepPrepared()).rejects.toThrow(
        /settled 1 prepared COPY stream\(s\); left those of database 'planted' \(.*role 'stranger'/,
      );
      expect(await prepared('clean')).toEqual([]);
      expect(await prepared('planted')).toEqual([held]);
    } finally {
      await admin.planted.query(`ROLLBACK PREPARED ${admin.planted.escapeLiteral(held)}`);
    }
  });

  it('accepts tapyard_meta owned by a role the loading role belongs to', async () => {
    await admin.member.query(`CREATE SCHEMA tapyard_meta AUTHORIZATION platform`);
    await admin.member.query(`SET ROLE platform`);
    await admin.member.query(
      `CREATE TABLE tapyard_meta.loads (pipeline_token text PRIMARY KEY, target text NOT NULL,
       rows_loaded bigint, rows_rejected bigint, loaded_at timestamptz NOT NULL DEFAULT now())`,
    );
    await admin.member.query(`RESET ROLE`);
    await tables('member');
    const t = target('member');
    expect(await destination.committed(t)).toBeNull();
    await destination.prepare(t);
    expect(await destination.load(t, oneChunk(), none, () => undefined)).toMatchObject({ loaded: 2 });
  });
});
