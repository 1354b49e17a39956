import { Inject, Injectable } from '@nestjs/common';
import { PoolClient, QueryResult } from 'pg';
import {
  CONFIG,
  ServiceUnavailableError,
  TapyardConfig,
  ValidationError,
  errorMessage,
  quoteIdent,
} from '@tapyard/core';
import { LOAD_ID_COLUMN, PipelineDefinition } from '@tapyard/model';
import {
  Destination,
  DropOutcome,
  LoadResult,
  LoadTarget,
  Payload,
  ReadBack,
  RejectedRow,
  RowsPage,
  TargetShape,
  databaseOf,
  writeModeOf,
} from '../destination';
import { CreatedObject, CreatedObjects } from '../ownership/created-objects';
import {
  CreatedTable,
  TableLocation,
  dropTables,
  qualified,
  rejectsTable,
  tableExists,
} from './created-tables';
import { PgPools } from './pg-pools';
import { DestinationErrorCode } from '../destination-errors';
import { copyRejects, rejectLines } from './pg-copy';
import { sendOneMessage, takeSmall } from './one-message';
import { withPgClient } from './pg-connection';
import { LOAD_ID_SETTING, PG_MAX_COLUMNS, checkMetaOwners, ensureTables } from './pg-tables';
import { writeRows } from './write-modes';
import {
  ExtraStream,
  abandonStreams,
  commitStreams,
  copyStreams,
  gidPrefix,
  preparedTokens,
  prepareStreams,
  settlePrepared,
} from './copy-streams';

export { PG_MAX_COLUMNS, PG_TYPES, pgType } from './pg-tables';

/**
 * How many times its CSV bytes an input's COPY may take, with room to spare: a binary COPY field is a
 * 4-byte length and at most 8 bytes of value where the CSV field took at least 2 (a digit, a comma).
 */
const CARRIED_COPY_GROWTH = 16;

/** What PostgreSQL answers for the ledger of a database no job loaded yet: no such table, or no such schema. */
const NO_LEDGER = new Set(['42P01', '3F000']);

/**
 * Loads with COPY FROM STDIN inside one transaction per job, together with a ledger row keyed by
 * the pipeline token (schema `tapyard_meta` of the target database). A worker that dies mid-load
 * leaves nothing (the transaction rolls back); a redelivered job that already committed finds its
 * ledger row and writes nothing. Rejected rows go to `<table>_rejects` in the same transaction.
 * Every write mode stays inside that one transaction, so exactly-once holds for each: `replace`
 * deletes the table's rows and copies the job's (readers keep seeing the old rows until COMMIT, and
 * are never blocked); `merge` copies into a temporary table, then upserts from it through the unique
 * index on the key. A large append may copy on two connections at once (PG_COPY_STREAMS), still as
 * one load: the further streams are prepared transactions that commit with the ledger row (see
 * copy-streams.ts).
 */
@Injectable()
export class PostgresDestination implements Destination {
  readonly name = 'postgres';
  readonly processName = 'PostgresLoader' as const;
  readonly capabilities = {
    exactlyOnce: true,
    schemaEvolution: true,
    maxBatchRows: null,
    csvPassThrough: true,
    retractable: true,
  };
  readonly encoder = 'copy-text';
  /** Databases whose tapyard_meta schema and ledger this process found owned as they must be. */
  private readonly vouched = new Set<string>();

  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    private readonly pools: PgPools,
    private readonly ownership: CreatedObjects,
  ) {}

  selects(destination: PipelineDefinition['destination']): boolean {
    return destination.database !== undefined && destination.database.usePostgres !== false;
  }

  describe(destination: PipelineDefinition['destination']): string {
    const { dbName, schema, table } = databaseOf(destination);
    return `${dbName}.${schema}.${table}`;
  }

  /**
   * A connection to the target database (the platform's without one) can be had. A pooled connection
   * is taken without a query: every job probes, and one lost since fails the job's next statement
   * as unreachable all the same.
   */
  async probe(target?: LoadTarget): Promise<void> {
    const database = target ? databaseOf(target.destination).dbName : this.config.database.name;
    await this.withClient(database, () => Promise.resolve());
  }

  async committed(target: LoadTarget): Promise<LoadResult | null> {
    if (this.claimDecides(target)) return null;
    const { dbName, schema, table } = databaseOf(target.destination);
    return this.withClient(dbName, async (client) => {
      await this.vouchForMeta(client, dbName);
      // One round trip per job: the ledger row and whether an earlier delivery left streams prepared. A
      // database without the ledger yet (no load ever, so nothing prepared either) answers "no such table".
      // Named: planned once per connection (~0.27 ms a job otherwise).
      const read = () =>
        client.query<{ rows_loaded: string | null; rows_rejected: string | null; pending: boolean }>({
          name: 'tapyard-committed',
          text: `SELECT l.rows_loaded, l.rows_rejected,
                  EXISTS (SELECT 1 FROM pg_prepared_xacts
                           WHERE database = current_database() AND starts_with(gid, $2)) AS pending
             FROM (SELECT 1) one
             LEFT JOIN tapyard_meta.loads l ON l.pipeline_token = $1 AND l.rows_loaded IS NOT NULL`,
          values: [target.pipelineToken, gidPrefix(target.pipelineToken)],
        });
      let ledger = await read().catch((err: unknown) => {
        if (NO_LEDGER.has((err as { code?: string }).code ?? '')) return null;
        throw err;
      });
      if (ledger?.rows[0].pending) {
        // An earlier delivery died with streams prepared: they commit or roll back with its ledger row.
        await this.settle(client, dbName, target.pipelineToken);
        ledger = await read();
      }
      const row = ledger?.rows[0];
      if (!row || row.rows_loaded === null) return null;
      return {
        loaded: Number(row.rows_loaded),
        rejected: Number(row.rows_rejected),
        alreadyLoaded: true,
        location: `${dbName}.${schema}.${table}`,
        rejectsLocation: `${dbName}.${schema}.${rejectsTable(table)}`,
      };
    });
  }

  /**
   * Whether the load's own claim is check enough for a redelivery: it answers an earlier committed
   * delivery as `already` (settling that delivery's prepared streams, if any). What the claim cannot
   * see is streams an earlier delivery prepared and died before committing its ledger row: those
   * only a load past PG_COPY_STREAM_MIN_BYTES opens, and the COPY of a small input carried in its job
   * stays far below it (CARRIED_COPY_GROWTH). So such a job skips the check, which cost every small
   * job a round trip and a transaction of its own.
   */
  private claimDecides(target: LoadTarget): boolean {
    const { copyStreams, copyStreamMinBytes } = this.config.database;
    return (
      target.carriedBytes !== undefined &&
      (copyStreams <= 1 || target.carriedBytes * CARRIED_COPY_GROWTH < copyStreamMinBytes)
    );
  }

  locations(destination: PipelineDefinition['destination']): TableLocation[] {
    const { dbName, schema, table } = databaseOf(destination);
    const at = { store: 'postgres' as const, database: dbName, schema };
    return [
      { ...at, name: table },
      { ...at, name: rejectsTable(table) },
    ];
  }

  /** Answers the data table's declared column types: the encoder writes binary COPY for the ones it can. */
  async prepare(target: LoadTarget): Promise<TargetShape> {
    if (target.columns.length > PG_MAX_COLUMNS) {
      throw new ValidationError(
        `PostgreSQL tables hold at most ${PG_MAX_COLUMNS} columns; this load has ${target.columns.length}`,
      ).coded(DestinationErrorCode.LoadRefused);
    }
    const [data, rejects] = this.locations(target.destination);
    return this.withClient(data.database, async (client) => {
      // ensureTables checks what it creates; what is there already is vouched for here.
      await this.vouchForMeta(client, data.database);
      return ensureTables(client, this.ownership, target, data, rejects);
    });
  }

  async load(
    target: LoadTarget,
    payloads: AsyncIterable<Payload>,
    rejects: () => AsyncIterable<RejectedRow>,
    progress: (rowsSoFar: number) => void,
  ): Promise<LoadResult> {
    const { dbName, schema, table } = databaseOf(target.destination);
    const location = `${dbName}.${schema}.${table}`;
    const rejectsLocation = `${dbName}.${schema}.${rejectsTable(table)}`;
    return this.withClient(dbName, async (client) => {
      let extras: ExtraStream[] = [];
      const token = client.escapeLiteral(target.pipelineToken);
      const opening = `BEGIN; SET LOCAL TimeZone = 'UTC';
         ${target.loadId ? `SELECT set_config('${LOAD_ID_SETTING}', ${token}, true);` : ''}
         INSERT INTO tapyard_meta.loads (pipeline_token, target) VALUES (${token}, ${client.escapeLiteral(location)})`;
      const already = async (): Promise<LoadResult> => {
        await client.query('ROLLBACK');
        // The load that committed may have died before it committed its further streams.
        await this.settle(client, dbName, target.pipelineToken);
        const prev = await client.query(
          `SELECT rows_loaded, rows_rejected FROM tapyard_meta.loads WHERE pipeline_token = $1`,
          [target.pipelineToken],
        );
        const row = prev.rows[0] as { rows_loaded: string; rows_rejected: string } | undefined;
        return {
          loaded: Number(row?.rows_loaded ?? 0),
          rejected: Number(row?.rows_rejected ?? 0),
          alreadyLoaded: true,
          location,
          rejectsLocation,
        };
      };
      try {
        const append = writeModeOf(target) === 'append';
        const taken = append ? await takeSmall(payloads) : { payloads, whole: null };
        let loaded: number;
        let rejectText: AsyncIterable<string> | null = null;
        if (taken.whole !== null) {
          // A small load: its statements, COPY and data in one message (see sendOneMessage). Its rejects
          // are known once every payload was read: without any, the ledger's counts and the COMMIT go in
          // that message too (the rows COPY takes are those of its data: lines of COPY text, the records
          // the CSV check counted).
          const lines = rejectLines(target.pipelineToken, rejects())[Symbol.asyncIterator]();
          const firstLines = await lines.next();
          const closing = (rows: number): string =>
            firstLines.done
              ? `; UPDATE tapyard_meta.loads SET rows_loaded = ${rows}, rows_rejected = 0 WHERE pipeline_token = ${token}; COMMIT`
              : '';
          const columns = target.columns.map((c) => quoteIdent(c.name)).join(', ');
          const sent = await sendOneMessage(
            client,
            opening,
            `${quoteIdent(schema)}.${quoteIdent(table)}`,
            columns,
            taken.whole,
            closing,
          );
          if (!sent.claimed) return await already();
          loaded = sent.rows;
          progress(loaded);
          if (firstLines.done) {
            // Committed: the ledger says what PostgreSQL took, should the two counts ever differ.
            if (loaded !== sent.counted)
              await client.query(`UPDATE tapyard_meta.loads SET rows_loaded = $1 WHERE pipeline_token = $2`, [
                loaded,
                target.pipelineToken,
              ]);
            return { loaded, rejected: 0, alreadyLoaded: false, location, rejectsLocation };
          }
          rejectText = (async function* () {
            yield firstLines.value;
            for (let next = await lines.next(); !next.done; next = await lines.next()) yield next.value;
          })();
        } else {
          // The transaction's start and the ledger claim go in one message (values as literals: a
          // multi-statement message takes no parameters), and the ledger's counts with the COMMIT.
          const opened = (await client.query(
            `${opening} ON CONFLICT (pipeline_token) DO NOTHING RETURNING pipeline_token`,
          )) as unknown as QueryResult[];
          if (opened[opened.length - 1].rowCount === 0) return await already();
          if (append && this.config.database.copyStreams > 1) {
            ({ loaded, extras } = await copyStreams(
              client,
              () => this.pools.spare(dbName),
              {
                streams: this.config.database.copyStreams,
                minBytes: this.config.database.copyStreamMinBytes,
                pipelineToken: target.pipelineToken,
                loadId: target.loadId === true,
                table: `${quoteIdent(schema)}.${quoteIdent(table)}`,
                columns: target.columns.map((c) => c.name),
              },
              taken.payloads,
              progress,
            ));
          } else {
            loaded = await writeRows(client, target, taken.payloads, progress);
          }
        }
        const rejected = await copyRejects(
          client,
          `COPY ${quoteIdent(schema)}.${quoteIdent(rejectsTable(table))} (pipeline_token, line, stage, reason, raw) FROM STDIN (FORMAT text)`,
          rejectText ?? rejectLines(target.pipelineToken, rejects()),
        );
        await prepareStreams(extras);
        // The decision: the ledger row commits, and with it every stream prepared above.
        await client.query(
          `UPDATE tapyard_meta.loads SET rows_loaded = ${loaded}, rows_rejected = ${rejected} WHERE pipeline_token = ${token};
           COMMIT`,
        );
        await commitStreams(extras, client).catch((err: unknown) => {
          // Loaded as far as the ledger goes: a retry of the job commits what is still prepared.
          throw new ServiceUnavailableError(
            'postgres',
            `PostgreSQL database '${dbName}' did not commit a prepared COPY stream of this load: ${errorMessage(err)}`,
          ).coded(DestinationErrorCode.Unavailable);
        });
        return { loaded, rejected, alreadyLoaded: false, location, rejectsLocation };
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        await abandonStreams(extras, { primary: client, pipelineToken: target.pipelineToken });
        throw err;
      }
    });
  }

  /**
   * Settles the streams of a two-stream load of `pipelineToken` still prepared in `database`, as its
   * ledger row says (see copy-streams.ts); `client` is outside a transaction.
   */
  private settle(client: PoolClient, database: string, pipelineToken: string): Promise<number> {
    return settlePrepared(client, pipelineToken, async () => {
      const runner = await this.pools.streams(database).connect();
      return [runner, () => runner.release()];
    });
  }

  /**
   * Settles what loads left prepared in every database of the destination server (their worker
   * died between PREPARE and COMMIT PREPARED, and no delivery of the job came back); returns how
   * many prepared streams it found.
   */
  async sweepPrepared(): Promise<number> {
    // pg_prepared_xacts lists the whole server's: any database of it answers.
    const server = decodeURIComponent(new URL(this.config.database.destinationUrl).pathname.slice(1));
    const databases = await this.withClient(server || this.config.database.name, async (client) => {
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
        found += await this.withClient(database, async (client) => {
          await this.vouchForMeta(client, database);
          let n = 0;
          for (const token of await preparedTokens(client)) n += await this.settle(client, database, token);
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
  async removeRows(target: LoadTarget): Promise<number> {
    const [data, rejects] = this.locations(target.destination);
    return this.withClient(data.database, async (client) => {
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
  async readRows(target: LoadTarget, which: 'loaded' | 'rejects', page: RowsPage): Promise<ReadBack> {
    const [data, rejects] = this.locations(target.destination);
    const at = which === 'loaded' ? data : rejects;
    const location = `${at.database}.${at.schema}.${at.name}`;
    return this.withClient(at.database, async (client) => {
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
  async drop(objects: CreatedObject[]): Promise<DropOutcome[]> {
    const tables = objects.filter((o): o is CreatedTable => o.store === 'postgres');
    const outcomes: DropOutcome[] = [];
    for (const database of new Set(tables.map((o) => o.database))) {
      const group = tables.filter((o) => o.database === database);
      outcomes.push(...(await this.withClient(database, (client) => dropTables(client, group))));
    }
    return outcomes;
  }

  /**
   * Refuses a database whose tapyard_meta objects another role made (checkMetaOwners). Once the schema
   * and the ledger exist and are vouched for, no other role can replace them (only their owner may),
   * so each database is checked until then, and not again by this process.
   */
  private async vouchForMeta(client: PoolClient, database: string): Promise<void> {
    if (this.vouched.has(database)) return;
    if ((await checkMetaOwners(client, database)) >= 2) this.vouched.add(database);
  }

  private withClient<T>(database: string, work: (c: PoolClient) => Promise<T>): Promise<T> {
    return withPgClient(this.pools, database, work);
  }
}
