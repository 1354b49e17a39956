import { Client } from 'pg';
import { QueryRunner } from '@tapyard/nl-query';
import { TestApi, startApi } from './support/apps';
import { issueKey, newBootstrapKey } from './support/auth';
import { TEST_DATABASE_URL, TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { ModelDouble } from './support/model-double';
import { closedPort } from './support/net';

/**
 * Natural-language SQL between two tenants (MULTI_TENANT=true, real PostgreSQL, the model played by
 * the wire double): a tenant whose tables are named like catalog relations reads its own tables,
 * never the catalog's view of the other tenant, each tenant queries as a role of its own, and user
 * queries that fill their pool leave the platform's connections free.
 */
describe('natural-language SQL between tenants (real PostgreSQL, model double)', () => {
  const operator = uniqueEnvironment('nqo');
  const tenantA = uniqueEnvironment('nqa');
  const tenantB = uniqueEnvironment('nqb');
  const schemaA = `t_${tenantA}`;
  const schemaB = `t_${tenantB}`;
  const boot = newBootstrapKey();
  const double = new ModelDouble();
  let api: TestApi;
  let pg: Client;
  let keyA: string;
  let keyB: string;
  let base: string;

  const ask = (key: string, body: Record<string, unknown>) =>
    api.http.post('/api/v1/query/postgres').set('x-api-key', key).send(body);
  const sqlReply = (sql: string) => ({ json: { sql, explanation: 'because' } });
  const roleOf = async (env: string): Promise<string> =>
    (await pg.query<{ role: string }>('SELECT tapyard.query_role($1) AS role', [env])).rows[0].role;

  beforeAll(async () => {
    await double.start();
    api = await startApi({
      TAPYARD_ENV: operator,
      MULTI_TENANT: 'true',
      USE_API_KEYS: 'true',
      TAPYARD_BOOTSTRAP_API_KEY: boot,
      TAP_EGRESS_ALLOW: double.address,
      // Long enough that the blocked queries below are still waiting when the platform is asked.
      QUERY_TIMEOUT_MS: '60000',
      QUERY_POOL_SIZE: '2',
      ...TEST_OBJECT_STORE,
    });
    const port = await closedPort();
    await api.app.listen(port, '127.0.0.1');
    base = `http://127.0.0.1:${port}/api/v1`;
    keyA = await issueKey(api.http, boot, 'a-admin', { template: 'full-access' }, { tenant: tenantA });
    keyB = await issueKey(api.http, boot, 'b-admin', { template: 'full-access' }, { tenant: tenantB });
    for (const key of [keyA, keyB]) {
      await api.http
        .put('/api/v1/secrets/ai')
        .set('x-api-key', key)
        .send({ provider: 'openai-compatible', baseUrl: double.openaiUrl, model: 'm' })
        .expect(200);
    }
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    // Tenant B: a table whose names and values are its own business.
    await pg.query(`CREATE SCHEMA "${schemaB}"`);
    await pg.query(`CREATE TABLE "${schemaB}".b_secret_payroll (id int, b_secret_name text)`);
    await pg.query(
      `INSERT INTO "${schemaB}".b_secret_payroll SELECT i, 'b-secret-' || (i % 5) FROM generate_series(1, 500) i`,
    );
    await pg.query(`ANALYZE "${schemaB}".b_secret_payroll`);
    // Tenant A: tables named like the catalog's (what pipelines named pg_stats and pg_class load into).
    await pg.query(`CREATE SCHEMA "${schemaA}"`);
    await pg.query(
      `CREATE TABLE "${schemaA}".pg_stats (schemaname text, tablename text, attname text, most_common_vals text)`,
    );
    await pg.query(`INSERT INTO "${schemaA}".pg_stats VALUES ('mine', 'mine', 'mine', 'a-own-value')`);
    await pg.query(`CREATE TABLE "${schemaA}".pg_class (relname text)`);
    await pg.query(`INSERT INTO "${schemaA}".pg_class VALUES ('a-own-relation')`);
    await pg.query(`CREATE TABLE "${schemaA}".orders (id int)`);
    await pg.query(`INSERT INTO "${schemaA}".orders SELECT generate_series(1, 10)`);
  }, 60000);
  afterAll(async () => {
    await pg.query(`DROP SCHEMA IF EXISTS "${schemaA}" CASCADE`);
    await pg.query(`DROP SCHEMA IF EXISTS "${schemaB}" CASCADE`);
    await pg.end();
    await api.close();
    await double.stop();
  });
  beforeEach(() => double.reset());

  it("a tenant's tables named pg_stats and pg_class are its own: the other tenant's statistics and names never show", async () => {
    // B queries its table first, so that its query role holds SELECT on it.
    double.script(sqlReply('SELECT count(*) FROM b_secret_payroll'));
    const b = await ask(keyB, { question: 'how many' }).expect(200);
    expect(b.body.rows).toEqual([['500']]);

    double.script(
      sqlReply('SELECT schemaname, tablename, attname, most_common_vals::text FROM pg_stats'),
      sqlReply('SELECT relname FROM pg_class'),
    );
    const stats = await ask(keyA, { question: 'statistics' }).expect(200);
    expect(stats.body.rows).toEqual([['mine', 'mine', 'mine', 'a-own-value']]);
    const names = await ask(keyA, { question: 'relations' }).expect(200);
    expect(names.body.rows).toEqual([['a-own-relation']]);
    expect(JSON.stringify([stats.body, names.body])).not.toMatch(/b_secret|b-secret/);
    // What ran names A's schema: the server had no name to resolve.
    expect(stats.body.sql).toBe(
      `SELECT schemaname, tablename, attname, most_common_vals::text FROM "${schemaA}".pg_stats`,
    );
  });

  it("the assistant's sql_query tool takes the same path: the tenant's own pg_stats, nothing of the other's", async () => {
    double.script(
      { toolCalls: [{ name: 'sql_query', arguments: { question: 'statistics' } }] },
      sqlReply('SELECT tablename, most_common_vals FROM pg_stats'),
      { text: 'Done.' },
    );
    const res = await fetch(`${base}/assistant/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': keyA },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'show statistics' }] }),
    });
    expect(res.status).toBe(200);
    const raw = await res.text();
    const result = raw
      .split('\n\n')
      .find((block) => block.startsWith('event: tool_result'))
      ?.split('\n')
      .find((l) => l.startsWith('data: '));
    expect(JSON.parse(result!.slice(6)).result).toMatchObject({
      sql: `SELECT tablename, most_common_vals FROM "${schemaA}".pg_stats`,
      rows: [['mine', 'a-own-value']],
    });
    expect(raw).not.toMatch(/b_secret|b-secret/);
  });

  it('each tenant queries as a role of its own that reads only its own tables, even past the checks', async () => {
    double.script(sqlReply('SELECT count(*) FROM orders'));
    await ask(keyA, { question: 'orders' }).expect(200);
    const [roleA, roleB] = [await roleOf(tenantA), await roleOf(tenantB)];
    expect(roleA).not.toBe(roleB);
    expect(roleA).not.toBe(api.config.query.role);
    const { rows } = await pg.query<{ a_reads_b: boolean; b_reads_a: boolean }>(
      `SELECT has_table_privilege($1, $3, 'SELECT') AS a_reads_b, has_schema_privilege($2, $4, 'USAGE') AS b_reads_a`,
      [roleA, roleB, `"${schemaB}".b_secret_payroll`, schemaA],
    );
    expect(rows).toEqual([{ a_reads_b: false, b_reads_a: false }]);
    // Past the parser and the schema check (a bug there), PostgreSQL itself refuses A's role, and the
    // catalog's statistics show A nothing of B's.
    const runner = api.app.get(QueryRunner);
    const db = api.config.database.name;
    await expect(
      runner.run(tenantA, db, schemaA, `SELECT * FROM "${schemaB}".b_secret_payroll`, [], 5),
    ).rejects.toMatchObject({ status: 400, message: expect.stringContaining('permission denied') });
    const catalog = await runner.run(
      tenantA,
      db,
      schemaA,
      `SELECT tablename, most_common_vals::text FROM pg_catalog.pg_stats WHERE schemaname = '${schemaB}'`,
      [],
      5,
    );
    expect(catalog.rows).toEqual([]);
  });

  it('queries that fill their own pool leave the platform free: a metadata call answers while they wait', async () => {
    // A lock the test holds keeps A's queries waiting without using a CPU.
    double.script(sqlReply('SELECT count(*) FROM orders'));
    await ask(keyA, { question: 'warm up the grant' }).expect(200);
    const locker = new Client({ connectionString: TEST_DATABASE_URL });
    await locker.connect();
    // Queries of this suite waiting for the lock on A's orders (not other suites' queries).
    const waiting = async (): Promise<number> =>
      Number(
        (
          await pg.query(
            `SELECT count(DISTINCT a.pid) FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid
              WHERE NOT l.granted AND l.relation = $1::regclass AND a.query LIKE 'DECLARE tapyard_nl %'`,
            [`"${schemaA}".orders`],
          )
        ).rows[0].count,
      );
    const pending: Promise<{ status: number }>[] = [];
    try {
      await locker.query('BEGIN');
      await locker.query(`LOCK TABLE "${schemaA}".orders IN ACCESS EXCLUSIVE MODE`);
      const n = 4;
      double.script(...Array.from({ length: n }, () => sqlReply('SELECT count(*) FROM orders')));
      for (let i = 0; i < n; i++) pending.push(ask(keyA, { question: `orders ${i}` }).then((r) => r));
      for (let i = 0; i < 600 && (await waiting()) < 2; i++) await new Promise((r) => setTimeout(r, 100));
      expect(await waiting()).toBeGreaterThanOrEqual(2);
      // The user-query connections are taken and more queries queue behind them; the platform's
      // metadata call (its own pool) still answers, and the queries are still waiting when it has
      // (no more than QUERY_POOL_SIZE of them).
      const tables = await api.http
        .get('/api/v1/metadata/postgres/tables')
        .query({ schema: schemaB })
        .set('x-api-key', keyB)
        .expect(200);
      expect(tables.body).toEqual(['b_secret_payroll']);
      expect(await waiting()).toBe(2);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
    }
    const done = await Promise.all(pending);
    expect(done.map((r) => r.status)).toEqual([200, 200, 200, 200]);
  });
});
