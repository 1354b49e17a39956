import { Injectable } from '@nestjs/common';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Connection, ConnectionOptions } from 'snowflake-sdk';
import {
  ServiceUnavailableError,
  UpstreamError,
  ValidationError,
  errorMessage,
  quoteIdent,
} from '@tapyard/core';
import { EgressRefused } from '@tapyard/egress';
import { FieldType, PipelineDefinition, SchemaField } from '@tapyard/model';
import { Destination, LoadResult, LoadTarget, Payload, RejectedRow } from '../destination';

import { Delivery, Sink, sectionOf } from '../sinks/sink';
import { writeRowFile } from '../typed-rows';
import { warehouseDecimal } from '../objectstore/parquet-decimal';
import { SnowflakeTarget } from './section';
import { DestinationErrorCode } from '../destination-errors';
import { snowflakeEndpoint } from './endpoint';
import { copyProblem, putProblem } from './answers';

type SnowflakeSdk = typeof import('snowflake-sdk');
let sdk: Promise<SnowflakeSdk> | null = null;

/** The driver, loaded by the first load into Snowflake: a process that never loads there never pays for it. */
function snowflakeSdk(): Promise<SnowflakeSdk> {
  sdk ??= import('snowflake-sdk').then((m) => {
    m.configure({ logLevel: 'OFF' });
    return m;
  });
  return sdk;
}

// decimal: see sqlType.
const SQL_TYPES: Record<Exclude<FieldType, 'decimal'>, string> = {
  boolean: 'BOOLEAN',
  int: 'INTEGER',
  bigint: 'NUMBER(38,0)',
  float: 'FLOAT',
  double: 'FLOAT',
  string: 'VARCHAR',
  date: 'DATE',
  timestamp: 'TIMESTAMP_TZ',
};

const sqlType = (c: SchemaField): string =>
  c.type === 'decimal' ? warehouseDecimal(c, 'Snowflake', 'NUMBER') : SQL_TYPES[c.type];

const ident = (name: string): string => quoteIdent(name.toUpperCase());

type AnswerRow = Record<string, unknown>;

/**
 * A statement Snowflake answered without an error but did not carry out for the file. A file not
 * staged is an outage (the delivery is tried again, its PUT with it); rows a COPY did not load are
 * the job's failure: the file is in the load history now, so a redelivery's COPY would skip it.
 */
function staged(problem: string | null): void {
  if (problem !== null)
    throw new ServiceUnavailableError('snowflake', problem).coded(DestinationErrorCode.Unavailable);
}

function copied(problem: string | null): void {
  if (problem !== null) throw new UpstreamError(problem).coded(DestinationErrorCode.UpstreamFailed);
}

interface Settings {
  options: ConnectionOptions;
  where: string;
}

/**
 * SnowflakeLoader: the job's rows as one Parquet file PUT into the job's folder of the table's stage
 * (`@%TABLE/job=<pipelineToken>/`), then `COPY INTO … FROM` that folder, columns matched by name.
 * Exactly once: COPY INTO skips a staged file it loaded before (Snowflake's load history), a
 * redelivery PUTs the same name, and a finished job is recorded and never loaded again. New columns
 * are added to the table before the COPY.
 */
@Injectable()
export class SnowflakeDestination extends Sink implements Destination {
  readonly name = 'snowflake';
  readonly processName = 'SnowflakeLoader' as const;

  describe(destination: PipelineDefinition['destination']): string {
    return `Snowflake table ${targetOf(destination).table.toUpperCase()}`;
  }

  protected async reach(target: LoadTarget, d: Delivery): Promise<void> {
    await this.session(target, d, async (run) => {
      await run('SELECT 1');
    });
  }

  protected async ready(target: LoadTarget, d: Delivery): Promise<void> {
    const table = targetOf(target.destination).table.toUpperCase();
    await this.session(target, d, async (run) => {
      await run(
        `CREATE TABLE IF NOT EXISTS ${table} (${target.columns.map((c) => `${ident(c.name)} ${sqlType(c)}`).join(', ')})`,
      );
      for (const c of target.columns)
        await run(`ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS ${ident(c.name)} ${sqlType(c)}`);
    });
  }

  protected async deliver(
    target: LoadTarget,
    payloads: AsyncIterable<Payload>,
    rejects: () => AsyncIterable<RejectedRow>,
    progress: (rowsSoFar: number) => void,
    d: Delivery,
  ): Promise<LoadResult> {
    const table = targetOf(target.destination).table.toUpperCase();
    const work = await mkdtemp(join(tmpdir(), 'tapyard-snowflake-'));
    try {
      const name = 'part-00000.parquet';
      const file = join(work, name);
      const refused = this.refusals(target);
      const loaded = await writeRowFile('parquet', file, target, payloads, progress, this.processName, (r) =>
        refused.add(r),
      );
      // + 1 s a MB
      const uploadBound = this.bounds.requestTimeoutMs + Math.ceil((await stat(file)).size / 1000);
      await this.session(target, d, async (run) => {
        // The job's own folder of the table stage: its COPY sees only its file, which the load
        // history skips when a redelivery stages it again.
        const stage = `@%${table}/job=${target.pipelineToken}/`;
        const put = await run(
          `PUT 'file://${file}' ${stage} AUTO_COMPRESS = FALSE OVERWRITE = TRUE`,
          uploadBound,
        );
        staged(putProblem(put, name));
        const copy = await run(
          `COPY INTO ${table} FROM ${stage} FILE_FORMAT = (TYPE = PARQUET) MATCH_BY_COLUMN_NAME = CASE_INSENSITIVE`,
        );
        copied(copyProblem(copy, loaded));
      });
      return await this.finish(target, loaded, refused, rejects, `Snowflake table ${table}`, d);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  /**
   * One connection for `work`; failures to reach Snowflake are outages naming it. The driver retries a
   * broken upload for minutes: each statement gets SINK_REQUEST_TIMEOUT_MS (an upload more for a
   * bigger file).
   */
  private async session(
    target: LoadTarget,
    d: Delivery,
    work: (run: (sql: string, boundMs?: number) => Promise<AnswerRow[]>) => Promise<void>,
  ): Promise<void> {
    const s = await this.settings(target);
    const connection: Connection = (await snowflakeSdk()).createConnection(s.options);
    try {
      // The driver retries a refused login for minutes: an outage is reported sooner.
      await d.call(
        'a login',
        () =>
          new Promise<void>((resolve, reject) => {
            connection.connect((err) => (err ? reject(err) : resolve()));
          }),
        Math.min(LOGIN_TIMEOUT_MS, this.bounds.requestTimeoutMs),
      );
    } catch (err) {
      connection.destroy(() => undefined);
      if (err instanceof ServiceUnavailableError) throw err;
      throw new ServiceUnavailableError(
        'snowflake',
        `Snowflake at ${s.where} is unavailable: ${errorMessage(err).slice(0, 200)}`,
      ).coded(DestinationErrorCode.Unavailable);
    }
    const run = (sqlText: string, boundMs?: number): Promise<AnswerRow[]> =>
      d.call(`a statement`, () => this.execute(connection, s, sqlText), boundMs);
    try {
      await work(run);
    } finally {
      await new Promise<void>((resolve) => connection.destroy(() => resolve()));
    }
  }

  private execute(connection: Connection, s: Settings, sqlText: string): Promise<AnswerRow[]> {
    return new Promise<AnswerRow[]>((resolve, reject) => {
      connection.execute({
        sqlText,
        complete: (err, _statement, rows) => {
          if (!err) return resolve((rows ?? []) as AnswerRow[]);
          const code = (err as { code?: unknown }).code;
          // Network-level failures (no SQL state) are outages; SQL errors are the statement's.
          if ((err as { sqlState?: unknown }).sqlState === undefined || code === 401002) {
            reject(
              new ServiceUnavailableError(
                'snowflake',
                `Snowflake at ${s.where} failed: ${errorMessage(err).slice(0, 200)}`,
              ).coded(DestinationErrorCode.Unavailable),
            );
          } else
            reject(
              new UpstreamError(`Snowflake refused a statement: ${errorMessage(err).slice(0, 300)}`).coded(
                DestinationErrorCode.UpstreamFailed,
              ),
            );
        },
      });
    });
  }

  private async settings(target: LoadTarget): Promise<Settings> {
    const d = targetOf(target.destination);
    const f = await this.sectionSecret(target.environment, d.secretName);
    for (const k of ['account', 'user', 'warehouse', 'database', 'schema']) {
      if (!f[k]?.trim())
        throw new ValidationError(`secret '${d.secretName}' lacks '${k}'`).coded(
          DestinationErrorCode.InvalidSecret,
        );
    }
    if (!f.password && !f.privateKey)
      throw new ValidationError(`secret '${d.secretName}' needs 'password' or 'privateKey'`).coded(
        DestinationErrorCode.InvalidSecret,
      );
    // Before any lookup: the secret names Snowflake itself or an endpoint the operator allow-listed.
    const endpoint = snowflakeEndpoint(
      f,
      (host, port) => this.policy(target).isAllowListed(host, port),
      d.secretName,
      target.environment,
    );
    try {
      await this.policy(target).check(endpoint.host, endpoint.port);
    } catch (err) {
      if (err instanceof EgressRefused)
        throw new ValidationError(`the Snowflake endpoint is not allowed: ${err.message}`).coded(
          DestinationErrorCode.EndpointRefused,
        );
      throw err;
    }
    const options = {
      account: f.account,
      username: f.user,
      ...(f.privateKey
        ? { authenticator: 'SNOWFLAKE_JWT', privateKey: f.privateKey }
        : { password: f.password }),
      warehouse: f.warehouse,
      database: f.database,
      schema: f.schema,
      ...(f.role ? { role: f.role } : {}),
      ...(endpoint.accessUrl ? { accessUrl: endpoint.accessUrl } : {}),
      timeout: 60_000,
      // A refused login fails at once: the delivery's own retries (LOAD_RETRY_ATTEMPTS) take it from
      // there. The driver's retries (7, sleeping up to 16 s each) outlived the bound on the login and
      // the connection's destroy() alike, so every attempt at an unreachable account left a retry loop
      // running for minutes.
      sfRetryMaxLoginRetries: 0,
    } as ConnectionOptions;
    return { options, where: endpoint.where };
  }
}

const LOGIN_TIMEOUT_MS = 15_000;

function targetOf(destination: PipelineDefinition['destination']): SnowflakeTarget {
  return sectionOf<SnowflakeTarget>(destination, 'snowflake');
}
