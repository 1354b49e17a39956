import { Inject, Injectable } from '@nestjs/common';
import { DatabaseError, PoolClient, QueryResult } from 'pg';
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
import { TableLocation, rejectsTable } from './created-tables';
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
  prepareStreams,
  settlePrepared,
} from './copy-streams';
import { PgAccess, ledgerCommitted } from './pg-ledger';
import { dropCreatedTables, readLoadRows, removeLoadedRows, sweepPreparedStreams } from './pg-maintenance';

export { PG_MAX_COLUMNS, PG_TYPES, pgType } from './pg-tables';

/** Append targets a process remembers as ready (the oldest is forgotten first). */
const READY_TABLES_KEPT = 1000;
/** What a load into a table that changed since it was found ready fails with: a table, schema or column missing. */
const MISSING_OBJECT = new Set(['42P01', '3F000', '42703']);

/**
 * Where an append target found ready is remembered (null: looked at by every job). A merge's key index
 * takes the locked path every time (see ensureTables), and a scoped caller's pipeline may use only
 * tables a pipeline created, which is checked on every load.
 */
function readyKey(target: LoadTarget, data: TableLocation): string | null {
  if (target.mayAdopt === false || writeModeOf(target) !== 'append') return null;
  return JSON.stringify([data.database, data.schema, data.name]);
}

/** The shape has every column of the load (and the load-id column, when it has one). */
function covers(shape: TargetShape, target: LoadTarget): boolean {
  const has = (c: string) => Object.hasOwn(shape.columnTypes, c);
  return target.columns.every((c) => has(c.name)) && (!target.loadId || has(LOAD_ID_COLUMN));
}

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
  /** Append targets found ready (see prepare), by database, schema and table: their shape. */
  private readonly readyTables = new Map<string, TargetShape>();
  /** What the ledger and after-the-load functions (pg-ledger.ts, pg-maintenance.ts) use of this class. */
  private readonly access: PgAccess = {
    withClient: (database, work) => this.withClient(database, work),
    vouchForMeta: (client, database) => this.vouchForMeta(client, database),
    settle: (client, database, pipelineToken) => this.settle(client, database, pipelineToken),
  };

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
    return ledgerCommitted(this.access, this.config.database, target);
  }

  locations(destination: PipelineDefinition['destination']): TableLocation[] {
    const { dbName, schema, table } = databaseOf(destination);
    const at = { store: 'postgres' as const, database: dbName, schema };
    return [
      { ...at, name: table },
      { ...at, name: rejectsTable(table) },
    ];
  }

  /**
   * Answers the data table's declared column types: the encoder writes binary COPY for the ones it can.
   * An append target found ready is not looked at again by this process's next jobs (a query and a
   * round trip fewer per small job). A table or column dropped since: a small load makes it again and
   * sends its one message once more, a larger one fails as an outage whose retry looks again (see
   * load); binary COPY compares the declared types under its lock.
   */
  async prepare(target: LoadTarget): Promise<TargetShape> {
    if (target.columns.length > PG_MAX_COLUMNS) {
      throw new ValidationError(
        `PostgreSQL tables hold at most ${PG_MAX_COLUMNS} columns; this load has ${target.columns.length}`,
      ).coded(DestinationErrorCode.LoadRefused);
    }
    const [data] = this.locations(target.destination);
    const key = readyKey(target, data);
    const known = key === null ? undefined : this.readyTables.get(key);
    if (known !== undefined && covers(known, target)) return known;
    return this.withClient(data.database, (client) => this.ensure(client, target));
  }

  /** The tables of the load, made where missing, and their shape remembered when it may be (see prepare). */
  private async ensure(client: PoolClient, target: LoadTarget): Promise<TargetShape> {
    const [data, rejects] = this.locations(target.destination);
    // ensureTables checks what it creates; what is there already is vouched for here.
    await this.vouchForMeta(client, data.database);
    const shape = await ensureTables(client, this.ownership, target, data, rejects);
    const key = readyKey(target, data);
    if (key !== null) {
      this.readyTables.delete(key);
      if (this.readyTables.size >= READY_TABLES_KEPT)
        this.readyTables.delete(this.readyTables.keys().next().value!);
      this.readyTables.set(key, shape);
    }
    return shape;
  }

  /**
   * After a failed load: the tables are looked at again by the next job. True when the load was prepared
   * from what an earlier job found and failed for a table, schema or column missing since.
   */
  private forgetReady(target: LoadTarget, err: unknown): boolean {
    const key = readyKey(target, this.locations(target.destination)[0]);
    return (
      key !== null && this.readyTables.delete(key) && MISSING_OBJECT.has((err as DatabaseError).code ?? '')
    );
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
            // Its data is text, whatever the columns' types: made again, the tables take the same message.
            async (err) => {
              if (!this.forgetReady(target, err)) return false;
              await client.query('ROLLBACK');
              await this.ensure(client, target);
              return true;
            },
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
        // A larger load prepared from what an earlier job found, that misses a table or column, is an
        // outage of this delivery: its retry prepares anew.
        if (this.forgetReady(target, err)) {
          throw new ServiceUnavailableError(
            'postgres',
            `${location} or its rejects or ledger table changed after an earlier load found them ready ` +
              `(${errorMessage(err)}); the load is retried, which prepares them again`,
          ).coded(DestinationErrorCode.Unavailable);
        }
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

  async sweepPrepared(): Promise<number> {
    return sweepPreparedStreams(this.access, this.config.database);
  }

  async removeRows(target: LoadTarget): Promise<number> {
    return removeLoadedRows(this.access, this.locations(target.destination), target);
  }

  async readRows(target: LoadTarget, which: 'loaded' | 'rejects', page: RowsPage): Promise<ReadBack> {
    return readLoadRows(this.access, this.locations(target.destination), target, which, page);
  }

  async drop(objects: CreatedObject[]): Promise<DropOutcome[]> {
    // Rare: every table is looked at again.
    this.readyTables.clear();
    return dropCreatedTables(this.access, objects);
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
