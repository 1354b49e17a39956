import { RelationRef, UnsafeSqlError, checkReadOnlySql } from './sql-safety';

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
  ])('refuses %s', async (sql, reason) => {
    const err = await checkReadOnlySql(sql).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsafeSqlError);
    expect((err as Error).message).toContain(reason);
  });
});
