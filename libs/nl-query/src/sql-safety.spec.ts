import { RelationRef, UnsafeSqlError, checkReadOnlySql, qualifyRelations } from './sql-safety';

describe('generated SQL safety (PostgreSQL parser)', () => {
  it.each<[string, RelationRef[]]>([
    ['SELECT id, name FROM orders WHERE id > 3 ORDER BY id', [{ schema: null, name: 'orders' }]],
    [
      'WITH big AS (SELECT * FROM s.orders WHERE total > 100) SELECT count(*) FROM big',
      [{ schema: 's', name: 'orders' }],
    ],
    ['VALUES (1, 2), (3, 4)', []],
    [
      "SELECT date_trunc('month', created_at) m, sum(total) FROM orders GROUP BY 1",
      [{ schema: null, name: 'orders' }],
    ],
    [
      'SELECT o.id FROM orders o JOIN customers c ON c.id = o.customer_id WHERE EXISTS (SELECT 1 FROM refunds r WHERE r.order_id = o.id)',
      [
        { schema: null, name: 'orders' },
        { schema: null, name: 'customers' },
        { schema: null, name: 'refunds' },
      ],
    ],
  ])('accepts %s', async (sql, relations) => {
    expect(await checkReadOnlySql(sql)).toEqual(expect.arrayContaining(relations));
  });

  it.each([
    ['DELETE FROM orders', 'Delete statement'],
    ['UPDATE orders SET total = 0', 'Update statement'],
    ['INSERT INTO orders VALUES (1)', 'Insert statement'],
    ['DROP TABLE orders', 'Drop statement'],
    ['CREATE TABLE x (a int)', 'Create statement'],
    ['SELECT 1; SELECT 2', '2 statements'],
    ["SELECT pg_read_file('/etc/passwd')", 'pg_read_file'],
    ['SELECT pg_sleep(60)', 'pg_sleep'],
    ["SELECT set_config('role', 'postgres', false)", 'set_config'],
    ["SELECT dblink('host=x', 'select 1')", 'dblink'],
    ["SELECT lo_import('/etc/passwd')", 'lo_import'],
    ['SELECT * INTO copy_of_orders FROM orders', 'SELECT … INTO'],
    ['SELECT * FROM orders FOR UPDATE', 'locking clause'],
    ['SELECT * FROM orders FOR SHARE SKIP LOCKED', 'locking clause'],
    ['WITH gone AS (DELETE FROM orders RETURNING *) SELECT * FROM gone', 'deletes rows'],
    ['WITH x AS (UPDATE orders SET total = 1 RETURNING id) SELECT * FROM x', 'updates rows'],
    ['SELECT public.my_function(1)', 'my_function'],
    ['SELECT * FROM otherdb.public.orders', 'another database'],
    ["COPY orders TO PROGRAM 'id'", 'Copy statement'],
    ['SET ROLE postgres', 'VariableSet'],
    ['EXPLAIN ANALYZE DELETE FROM orders', 'Explain'],
    ["SELECT (SELECT pg_read_file('x'))", 'pg_read_file'],
    ['select 1 from', 'does not parse'],
    ["SELECT 't_other.orders'::regclass", 'regclass'],
    ['SELECT 16384::pg_catalog.regclass::text', 'regclass'],
    ['SELECT CAST(oid AS regtype) FROM orders', 'regtype'],
    ['SELECT * FROM generate_series(1, 2) AS g(x regnamespace)', 'regnamespace'],
    ['SELECT * FROM (WITH pg_stats AS (SELECT 1) SELECT * FROM pg_stats) a, pg_stats', 'starts with pg_'],
  ])('refuses %s', async (sql, reason) => {
    const err = await checkReadOnlySql(sql).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsafeSqlError);
    expect((err as Error).message).toContain(reason);
  });
});

describe('every table a generated query reads is named in the caller schema', () => {
  it.each([
    ['SELECT * FROM pg_stats', 'SELECT * FROM "t_a".pg_stats'],
    [
      'SELECT s.id, "Odd Name".x FROM sales s JOIN "Odd Name" ON true',
      'SELECT s.id, "Odd Name".x FROM "t_a".sales s JOIN "t_a"."Odd Name" ON true',
    ],
    [
      "WITH big AS (SELECT * FROM sales WHERE note = 'é') SELECT count(*) FROM big, ONLY pg_class",
      'WITH big AS (SELECT * FROM "t_a".sales WHERE note = \'é\') SELECT count(*) FROM big, ONLY "t_a".pg_class',
    ],
    ['TABLE sales', 'TABLE "t_a".sales'],
    ['SELECT * FROM t_a.sales', 'SELECT * FROM t_a.sales'],
  ])('%s', async (sql, qualified) => {
    expect(await qualifyRelations(sql, 't_a')).toBe(qualified);
  });

  it('quotes the schema and refuses a statement naming another schema', async () => {
    expect(await qualifyRelations('SELECT 1 FROM x', 'we"ird')).toBe('SELECT 1 FROM "we""ird".x');
    await expect(qualifyRelations('SELECT * FROM pg_catalog.pg_stats', 't_a')).rejects.toBeInstanceOf(
      UnsafeSqlError,
    );
  });
});
