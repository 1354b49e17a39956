import { PoolClient } from 'pg';
import { quoteIdent } from '@tapyard/core';
import { LOAD_ID_COLUMN } from '@tapyard/model';
import { LoadTarget, Payload, databaseOf, primaryKeyOf, writeModeOf } from '../destination';
import { copyPayloads } from './pg-copy';

/** Writes the job's rows as its write mode says, inside the load's transaction; returns the rows copied. */
export async function writeRows(
  client: PoolClient,
  target: LoadTarget,
  payloads: AsyncIterable<Payload>,
  progress: (rowsSoFar: number) => void,
): Promise<number> {
  const { schema, table } = databaseOf(target.destination);
  const t = `${quoteIdent(schema)}.${quoteIdent(table)}`;
  const columns = target.columns.map((c) => c.name);
  const mode = writeModeOf(target);
  if (mode === 'append') return copyPayloads(client, t, columns, payloads, progress);
  if (mode === 'replace') {
    // Serialises writers of the table (two replaces, or a replace and an append, never interleave)
    // while readers go on reading the old rows: ACCESS SHARE does not conflict with this mode.
    await client.query(`LOCK TABLE ${t} IN SHARE ROW EXCLUSIVE MODE`);
    await client.query('SAVEPOINT tapyard_replace');
    await client.query(`DELETE FROM ${t}`);
    const copied = await copyPayloads(client, t, columns, payloads, progress);
    // A job that loads no row (every row rejected, or none at all) fails: it replaces nothing.
    if (copied === 0) await client.query('ROLLBACK TO SAVEPOINT tapyard_replace');
    return copied;
  }
  const key = primaryKeyOf(target);
  // Dropped at COMMIT or ROLLBACK, so a pooled connection never keeps one. The sequence column
  // keeps the file's order: of rows sharing a key, the last one wins.
  await client.query(`CREATE TEMP TABLE tapyard_merge (LIKE ${t} INCLUDING DEFAULTS) ON COMMIT DROP`);
  await client.query(`ALTER TABLE tapyard_merge ADD COLUMN tapyard_seq bigint GENERATED ALWAYS AS IDENTITY`);
  const copied = await copyPayloads(client, 'tapyard_merge', columns, payloads, progress);
  const written = [...columns, ...(target.loadId ? [LOAD_ID_COLUMN] : [])].map(quoteIdent);
  const keys = key.map(quoteIdent).join(', ');
  const updated = written.filter((c) => !key.map(quoteIdent).includes(c));
  await client.query(
    `INSERT INTO ${t} (${written.join(', ')})
     SELECT ${written.join(', ')} FROM (
       SELECT DISTINCT ON (${keys}) * FROM tapyard_merge ORDER BY ${keys}, tapyard_seq DESC) latest
     ON CONFLICT (${keys}) DO ${
       updated.length > 0 ? `UPDATE SET ${updated.map((c) => `${c} = EXCLUDED.${c}`).join(', ')}` : 'NOTHING'
     }`,
  );
  return copied;
}
