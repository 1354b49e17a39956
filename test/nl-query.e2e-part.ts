import { Pool } from 'pg';
import { QueryRunner } from '@tapyard/nl-query';
import { TestApi, startApi } from './support/apps';
import { issueKey, newBootstrapKey } from './support/auth';
import { TEST_DATABASE_URL, TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { ModelDouble } from './support/model-double';
import { closedPort } from './support/net';

/**
 * Natural-language SQL and answers, against the real PostgreSQL, with the model played by the
 * OpenAI wire double: whatever the model writes, only a single read-only query of the caller's
 * tables runs, as a role that can read nothing else, with a timeout and a server-side row cap.
 */
describe('natural-language SQL and answers (real PostgreSQL, model double)', () => {
  const env = uniqueEnvironment('nlq');
  const schema = `nlq_${env.replace(/[^a-z0-9]/g, '_')}`.slice(0, 60);
  const admin = newBootstrapKey();
  const double = new ModelDouble();
  let api: TestApi;
  let pg: Pool;
  let port: number;

  const ask = (body: Record<string, unknown>, key = admin) =>
    api.http
      .post('/api/v1/query/postgres')
      .set('x-api-key', key)
      .send({ schema, ...body });
  const sqlReply = (sql: string) => ({ json: { sql, explanation: 'because' } });

  beforeAll(async () => {
    await double.start();
    port = await closedPort();
    api = await startApi({
      TAPYARD_ENV: env,
      ...TEST_OBJECT_STORE,
      TAP_EGRESS_ALLOW: double.address,
      USE_API_KEYS: 'true',
      TAPYARD_BOOTSTRAP_API_KEY: admin,
      QUERY_TIMEOUT_MS: '1500',
      QUERY_MAX_RESULT_BYTES: '64kb',
      PORT: String(port),
      HOST: '127.0.0.1',
    });
    await api.app.listen(port, '127.0.0.1');
    await api.http
      .put('/api/v1/secrets/ai')
      .set('x-api-key', admin)
      .send({ provider: 'openai-compatible', baseUrl: double.openaiUrl, model: 'm', 'model.sql': 'sql-1' })
      .expect(200);
    pg = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
    await pg.query(`CREATE SCHEMA "${schema}"`);
    await pg.query(
      `CREATE TABLE "${schema}".sales (id int PRIMARY KEY, region text, amount numeric(10,2), customer_email text)`,
    );
    await pg.query(
      `INSERT INTO "${schema}".sales SELECT i, (ARRAY['north','south','east'])[1 + i % 3], i * 1.5, 'person' || i || '@example.com' FROM generate_series(1, 250) i`,
    );
  }, 60000);
  afterAll(async () => {
    await pg.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pg.end();
    await api.close();
    await double.stop();
  });
  beforeEach(() => double.reset());

  it('runs a safe query: the model saw tables, columns and samples of non-sensitive columns only', async () => {
    double.script(
      sqlReply(
        'SELECT region, sum(amount) AS total, count(*) AS n FROM sales GROUP BY region ORDER BY region;',
      ),
    );
    const res = await ask({ question: 'total per region' }).expect(200);
    expect(res.body).toMatchObject({
      // What ran: every table named in the schema.
      sql: `SELECT region, sum(amount) AS total, count(*) AS n FROM "${schema}".sales GROUP BY region ORDER BY region`,
      columns: ['region', 'total', 'n'],
      rows: [
        ['east', expect.any(String), '83'],
        ['north', expect.any(String), '83'],
        ['south', expect.any(String), '84'],
      ],
      rowCount: 3,
      truncated: false,
      explanation: 'because',
    });
    const prompt = ModelDouble.promptText(double.calls[0]);
    expect(double.calls[0].body.model).toBe('sql-1');
    expect(prompt).toContain('TABLE sales (');
    expect(prompt).toContain('customer_email text');
    expect(prompt).toMatch(/region text {2}-- e\.g\. "(north|south|east)"/);
    expect(prompt).not.toContain('@example.com');
    // The platform's own schema never reaches the model.
    expect(prompt).not.toMatch(/secrets|api_keys|prompt_fragments|tapyard\./);
  });

  it('caps rows on the server and says so; a trailing comment is fine; execute:false returns the SQL only', async () => {
    double.script(sqlReply('SELECT id FROM sales ORDER BY id'));
    const capped = await ask({ question: 'all ids', maxRows: 10 }).expect(200);
    expect(capped.body).toMatchObject({ rowCount: 10, truncated: true });
    expect(capped.body.rows).toHaveLength(10);
    double.script(sqlReply('SELECT count(*) FROM sales -- all of them'));
    const commented = await ask({ question: 'how many, said twice' }).expect(200);
    expect(commented.body.rows).toEqual([['250']]);
    double.script(sqlReply('SELECT count(*) FROM sales'));
    const dry = await ask({ question: 'how many', execute: false }).expect(200);
    expect(dry.body).toEqual({
      sql: `SELECT count(*) FROM "${schema}".sales`,
      explanation: 'because',
      columns: [],
      rows: [],
      rowCount: 0,
      truncated: false,
    });
  });

  it('runs a reviewed statement as given, without the model, through the same checks as a written one', async () => {
    double.script(sqlReply('SELECT region, count(*) FROM sales GROUP BY region ORDER BY region'));
    const dry = await ask({ question: 'sales per region', execute: false }).expect(200);
    const calls = double.calls.length;
    const ran = await ask({ question: 'sales per region', sql: dry.body.sql }).expect(200);
    expect(double.calls.length).toBe(calls);
    expect(ran.body).toMatchObject({ sql: dry.body.sql, columns: ['region', 'count'], rowCount: 3 });
    expect(ran.body.rows).toEqual([
      ['east', '83'],
      ['north', '83'],
      ['south', '84'],
    ]);
    // A given statement is no more trusted than a written one.
    for (const [sql, reason] of [
      [`DELETE FROM "${schema}".sales`, /Delete statement/],
      ['SELECT * FROM tapyard.api_keys', /api_keys/],
      ['SELECT 1; SELECT 2', /refused/],
    ] as const) {
      const refused = await ask({ question: 'x', sql }).expect(400);
      expect(refused.body.message).toMatch(reason);
    }
    expect(double.calls.length).toBe(calls);
    expect((await pg.query(`SELECT count(*)::int AS n FROM "${schema}".sales`)).rows[0].n).toBe(250);
  });

  it('caps the bytes of a result on the server: a huge value is refused, many rows are cut and flagged', async () => {
    // 4 MB: 60 times the 64 KB cap, and made well within QUERY_TIMEOUT_MS on a loaded machine (30 MB was not).
    double.script(sqlReply("SELECT repeat('y', 4000000) AS y"));
    const huge = await ask({ question: 'a lot of y' }).expect(400);
    expect(huge.body.message).toContain('QUERY_MAX_RESULT_BYTES');
    expect(huge.text.length).toBeLessThan(2000);
    double.script(sqlReply("SELECT g, repeat('y', 1000) AS pad FROM generate_series(1, 1000) g"));
    const many = await ask({ question: 'many rows', maxRows: 1000 }).expect(200);
    expect(many.body.truncated).toBe(true);
    expect(many.body.rowCount).toBe(many.body.rows.length);
    expect(many.body.rows.length).toBeGreaterThan(10);
    expect(many.body.rows.length).toBeLessThanOrEqual(65); // 64 KiB of ~1 KB rows
    // A prefix, in order, within the cap (counted as PostgreSQL's text; JSON adds a little).
    expect(many.body.rows.map((r: unknown[]) => r[0])).toEqual(
      Array.from({ length: many.body.rows.length }, (_, i) => i + 1),
    );
    expect(JSON.stringify(many.body.rows).length).toBeLessThan(80 * 1024);
  });

  it('stops a query at the statement timeout (400 naming it)', async () => {
    double.script(sqlReply('SELECT count(*) FROM generate_series(1, 2000000000) g'));
    const res = await ask({ question: 'count to two billion' }).expect(400);
    expect(res.body.message).toContain('QUERY_TIMEOUT_MS');
  });

  it.each([
    ['a write', 'DELETE FROM sales', 'Delete'],
    ['DDL', 'DROP TABLE sales', 'Drop'],
    ['two statements', 'SELECT 1; DELETE FROM sales', '2 statements'],
    [
      'a data-modifying CTE',
      'WITH d AS (DELETE FROM sales RETURNING *) SELECT count(*) FROM d',
      'deletes rows',
    ],
    ['pg_read_file', "SELECT pg_read_file('/etc/passwd')", 'pg_read_file'],
    ['pg_sleep(60)', 'SELECT pg_sleep(60)', 'pg_sleep'],
    ['SELECT … INTO', 'SELECT * INTO sales_copy FROM sales', 'SELECT … INTO'],
    ['a locking clause', 'SELECT * FROM sales FOR UPDATE', 'locking clause'],
    ['the platform schema', 'SELECT * FROM tapyard.secrets', 'not a table of schema'],
    ['a catalog table', 'SELECT * FROM pg_authid', 'not a table of schema'],
    ['set_config', "SELECT set_config('statement_timeout', '0', true)", 'set_config'],
  ])('refuses %s even when the model writes it (400, saying why)', async (_what, sql, reason) => {
    double.script(sqlReply(sql));
    const res = await ask({ question: 'do it' }).expect(400);
    expect(res.body.message).toContain(reason);
    expect(Number((await pg.query(`SELECT count(*) FROM "${schema}".sales`)).rows[0].count)).toBe(250);
  });

  it('the query role reads nothing but the tables queries read: the platform schema is denied by PostgreSQL too', async () => {
    const runner = api.app.get(QueryRunner);
    await expect(
      runner.run(
        env,
        api.config.database.name,
        'tapyard',
        'SELECT * FROM tapyard.secrets',
        [{ schema: 'tapyard', name: 'secrets' }],
        5,
      ),
    ).rejects.toMatchObject({ status: 400, message: expect.stringContaining('never a platform schema') });
    // Past the parser and the relation check (a bug there), PostgreSQL itself refuses the role.
    await expect(
      runner.run(
        env,
        api.config.database.name,
        schema,
        'SELECT * FROM tapyard.secrets',
        [{ schema: null, name: 'sales' }],
        5,
      ),
    ).rejects.toMatchObject({ status: 400, message: expect.stringContaining('permission denied') });
    const role = api.config.query.role;
    const { rows } = await pg.query(
      `SELECT n.nspname FROM pg_namespace n WHERE has_schema_privilege($1, n.oid, 'USAGE') AND n.nspname IN ('tapyard', 'pg_toast')`,
      [role],
    );
    expect(rows).toEqual([]);
  });

  it('a schema the caller may not see is 404 before any model call; a key scoped to another database is 404', async () => {
    await ask({ question: 'x', schema: 'tapyard' }).expect(404);
    const other = await issueKey(api.http, admin, 'other-db', {
      capabilities: ['search:query:database=elsewhere'],
    });
    await ask({ question: 'x' }, other).expect(404);
    const viewer = await issueKey(api.http, admin, 'reporting', { template: 'reporting' });
    double.script(sqlReply('SELECT count(*) FROM sales'));
    await ask({ question: 'how many' }, viewer).expect(200);
    expect(double.calls).toHaveLength(1);
  });

  it('a tap calls it with its run key', async () => {
    double.script(sqlReply('SELECT max(id) FROM sales'));
    const script = [
      'import json, os, urllib.request',
      'def fetch():',
      '    url = "http://%s:%s/api/v1/query/postgres" % (os.environ["SERVICE_PLATFORM_HOST"], os.environ["SERVICE_PLATFORM_PORT"])',
      `    body = json.dumps({"question": "largest id", "schema": "${schema}"}).encode()`,
      '    req = urllib.request.Request(url, data=body, method="POST",',
      '        headers={"x-api-key": os.environ["SERVICE_PLATFORM_API_KEY"], "content-type": "application/json"})',
      '    with urllib.request.urlopen(req, timeout=30) as r:',
      '        return [{"rows": json.dumps(json.loads(r.read())["rows"])}]',
    ].join('\n');
    const res = await api.http
      .post('/api/v1/tap/test')
      .set('x-api-key', admin)
      .send({ name: 'asker', script })
      .expect(200);
    expect(res.body.error).toBeNull();
    expect(res.body.records).toEqual([{ rows: '[[250]]' }]);
  });

  it('answers from given context only, citing only given sources', async () => {
    double.script({
      json: { answer: 'New employees get 25 days.', citations: ['handbook.pdf#p4', 'made-up.pdf'] },
    });
    const res = await api.http
      .post('/api/v1/ai/answer')
      .set('x-api-key', admin)
      .send({
        question: 'How many vacation days?',
        context: [
          { text: 'Employees get 25 vacation days in their first year.', source: 'handbook.pdf#p4' },
          { text: 'The office opens at 8.', source: 'office.md' },
        ],
      })
      .expect(200);
    expect(res.body).toEqual({ answer: 'New employees get 25 days.', citations: ['handbook.pdf#p4'] });
    const prompt = ModelDouble.promptText(double.calls[0]);
    expect(prompt).toContain('say that you do not know');
    expect(prompt).toContain('Employees get 25 vacation days');
  });
});
