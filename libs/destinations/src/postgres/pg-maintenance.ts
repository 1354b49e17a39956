import { TapyardConfig, errorMessage, quoteIdent } from '@tapyard/core';
import { LOAD_ID_COLUMN } from '@tapyard/model';
import { DropOutcome, LoadTarget, ReadBack, RowsPage } from '../destination';
import { CreatedObject } from '../ownership/created-objects';
import { CreatedTable, TableLocation, dropTables, qualified, tableExists } from './created-tables';
import { preparedTokens } from './copy-streams';
import { PgAccess } from './pg-ledger';

// What the destination does after its loads: settle what they left prepared, retract a job's rows,
// read them back, drop the tables its pipelines created.

/**
 * Settles what loads left prepared in every database of the destination server (their worker
 * died between PREPARE and COMMIT PREPARED, and no delivery of the job came back); returns how
 * many prepared streams it found.
 */
export async function sweepPreparedStreams(
  access: PgAccess,
  config: TapyardConfig['database'],
): Promise<number> {
  // pg_prepared_xacts lists the whole server's: any database of it answers.
  const server = decodeURIComponent(new URL(config.destinationUrl).pathname.slice(1));
  const databases = await access.withClient(server || config.name, async (client) => {
    const { rows } = await client.query<{ database: string }>(
      `SELECT DISTINCT database FROM pg_prepared_xacts WHERE starts_with(gid, 'tapyard:')`,
    );
    return rows.map((r) => r.database);
  });
  let found = 0;
  // One database refused (or unreachable) does not keep the others' streams prepared.
  const left: string[] = [];
  for (const database of databases) {
    try {
      found += await access.withClient(database, async (client) => {
        await access.vouchForMeta(client, database);
        let n = 0;
        for (const token of await preparedTokens(client)) n += await access.settle(client, database, token);
        return n;
      });
    } catch (err) {
      left.push(`'${database}' (${errorMessage(err)})`);
    }
  }
  if (left.length > 0) {
    throw new Error(`settled ${found} prepared COPY stream(s); left those of database ${left.join(', ')}`);
  }
  return found;
}

/**
 * Deletes the rows the job loaded (by their load id) and the rows it rejected, in one transaction.
 * A table without the load-id column holds no rows of a job that carries one. The column is compared
 * as text: tables created before Nov 2026 keep it as text, later ones as uuid.
 */
export async function removeLoadedRows(
  access: PgAccess,
  [data, rejects]: TableLocation[],
  target: LoadTarget,
): Promise<number> {
  return access.withClient(data.database, async (client) => {
    await client.query('BEGIN');
    try {
      let removed = 0;
      const { rows } = await client.query<{ present: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM information_schema.columns
           WHERE table_schema = $1 AND table_name = $2 AND column_name = $3) AS present`,
        [data.schema, data.name, LOAD_ID_COLUMN],
      );
      if (rows[0].present) {
        const res = await client.query(
          `DELETE FROM ${qualified(data)} WHERE ${quoteIdent(LOAD_ID_COLUMN)}::text = $1`,
          [target.pipelineToken],
        );
        removed = res.rowCount ?? 0;
      }
      if (await tableExists(client, rejects)) {
        await client.query(`DELETE FROM ${qualified(rejects)} WHERE pipeline_token = $1`, [
          target.pipelineToken,
        ]);
      }
      await client.query('COMMIT');
      return removed;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  });
}

/**
 * Rows as JSON (dates ISO, exact decimals as numbers) so that any column type reads the same; a table
 * not there yet (nothing loaded) or without the load-id column (a pipeline older than load ids) holds
 * none of the job's rows.
 */
export async function readLoadRows(
  access: PgAccess,
  [data, rejects]: TableLocation[],
  target: LoadTarget,
  which: 'loaded' | 'rejects',
  page: RowsPage,
): Promise<ReadBack> {
  const at = which === 'loaded' ? data : rejects;
  const location = `${at.database}.${at.schema}.${at.name}`;
  return access.withClient(at.database, async (client) => {
    const { rows: present } = await client.query<{ ok: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM information_schema.columns
         WHERE table_schema = $1 AND table_name = $2 AND column_name = $3) AS ok`,
      [at.schema, at.name, which === 'loaded' ? LOAD_ID_COLUMN : 'pipeline_token'],
    );
    if (!present[0].ok) return { location, rows: [] };
    const sql =
      which === 'loaded'
        ? `SELECT to_jsonb(t) - '${LOAD_ID_COLUMN}' AS row FROM ${qualified(at)} t
           WHERE ${quoteIdent(LOAD_ID_COLUMN)}::text = $1 ORDER BY ctid LIMIT $2 OFFSET $3`
        : `SELECT jsonb_build_object('line', line, 'stage', stage, 'reason', reason) AS row
           FROM ${qualified(at)} WHERE pipeline_token = $1 ORDER BY line, ctid LIMIT $2 OFFSET $3`;
    const { rows } = await client.query<{ row: Record<string, unknown> }>(sql, [
      target.pipelineToken,
      page.limit,
      page.offset,
    ]);
    return { location, rows: rows.map((r) => r.row) };
  });
}

/**
 * One transaction per database, so a pipeline's data and rejects tables go together or not at all
 * (see dropTables).
 */
export async function dropCreatedTables(access: PgAccess, objects: CreatedObject[]): Promise<DropOutcome[]> {
  const tables = objects.filter((o): o is CreatedTable => o.store === 'postgres');
  const outcomes: DropOutcome[] = [];
  for (const database of new Set(tables.map((o) => o.database))) {
    const group = tables.filter((o) => o.database === database);
    outcomes.push(...(await access.withClient(database, (client) => dropTables(client, group))));
  }
  return outcomes;
}
