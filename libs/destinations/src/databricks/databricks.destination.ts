import { Inject, Injectable } from '@nestjs/common';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { extname, join } from 'node:path';
import { CONFIG, ServiceUnavailableError, TapyardConfig, ValidationError } from '@tapyard/core';
import { EgressPolicy } from '@tapyard/egress';
import { FieldType, PipelineDefinition, SchemaField, TypedBatch, rowText } from '@tapyard/pipelines';
import { SecretNotFoundError, SecretsService } from '@tapyard/secrets';
import { Destination, LoadResult, LoadTarget, Payload, RejectedRow } from '../destination';
import { jsValue } from '../js-values';
import { openRowWriter } from '../objectstore/file-writers';
import { SINK_REJECTS, SinkLedger } from '../sinks/sink-ledger';
import { DatabricksApi, DatabricksSettings, databricksSettings } from './databricks-api';
import { DatabricksTarget } from './section';

const SQL_TYPES: Record<FieldType, string> = {
  boolean: 'BOOLEAN',
  int: 'INT',
  bigint: 'BIGINT',
  float: 'FLOAT',
  double: 'DOUBLE',
  string: 'STRING',
  date: 'DATE',
  timestamp: 'TIMESTAMP',
};

const quote = (name: string): string => `\`${name.replace(/`/g, '``')}\``;

/**
 * DatabricksLoader: the job's rows as one Parquet file staged in a Unity Catalog volume under a
 * job-scoped name (`tapyard/<pipeline>/job=<pipelineToken>/part-00000.parquet`), then `COPY INTO` the
 * table through the SQL Statement Execution API. Exactly once: COPY INTO skips files it has loaded
 * (the warehouse's own load history), a redelivery stages the same name, and a finished job is
 * recorded and never loaded again. New columns reach the table through `mergeSchema`.
 */
@Injectable()
export class DatabricksDestination implements Destination {
  readonly name = 'databricks';
  readonly processName = 'DatabricksLoader' as const;
  readonly capabilities = {
    exactlyOnce: true,
    schemaEvolution: true,
    ordered: true,
    maxBatchRows: null,
    csvPassThrough: false,
    retractable: false,
  };
  readonly encoder = join(__dirname, '..', 'encoders', `typed${extname(__filename)}`);
  private readonly policy: EgressPolicy;

  constructor(
    @Inject(CONFIG) config: TapyardConfig,
    private readonly secrets: SecretsService,
    private readonly ledger: SinkLedger,
  ) {
    this.policy = new EgressPolicy(config.egressAllow);
  }

  selects(destination: PipelineDefinition['destination']): boolean {
    return destination.databricks !== undefined && destination.databricks !== null;
  }

  describe(destination: PipelineDefinition['destination']): string {
    return `Databricks table ${targetOf(destination).table}`;
  }

  async probe(target?: LoadTarget): Promise<void> {
    if (!target) return;
    await new DatabricksApi(await this.settings(target), this.policy).sql('SELECT 1');
  }

  async prepare(target: LoadTarget): Promise<void> {
    const s = await this.settings(target);
    const columns = target.columns.map((c) => `${quote(c.name)} ${SQL_TYPES[c.type]}`).join(', ');
    await new DatabricksApi(s, this.policy).sql(
      `CREATE TABLE IF NOT EXISTS ${this.table(s, target)} (${columns})`,
    );
  }

  committed(target: LoadTarget): Promise<LoadResult | null> {
    return this.ledger.committed(target.environment, this.name, target.pipelineToken);
  }

  locations(): [] {
    return [];
  }

  async drop(): Promise<[]> {
    return [];
  }

  async load(
    target: LoadTarget,
    payloads: AsyncIterable<Payload>,
    rejects: () => AsyncIterable<RejectedRow>,
    progress: (rowsSoFar: number) => void,
  ): Promise<LoadResult> {
    const done = await this.committed(target);
    if (done) {
      for await (const _ of payloads); // drain the reader
      return done;
    }
    const s = await this.settings(target);
    const api = new DatabricksApi(s, this.policy);
    const work = await mkdtemp(join(tmpdir(), 'tapyard-databricks-'));
    try {
      const file = join(work, 'part-00000.parquet');
      const { loaded, refused } = await this.writeParquet(file, target, payloads, progress);
      const dir = `tapyard/${target.pipeline}/job=${target.pipelineToken}`;
      // Memory: the Parquet file of one job is read whole for the upload (the Files API takes one body).
      const volumePath = await api.upload(`${dir}/part-00000.parquet`, await readFile(file));
      await api.sql(
        `COPY INTO ${this.table(s, target)} FROM '${volumePath.replace(/\/part-00000\.parquet$/, '/')}' ` +
          `FILEFORMAT = PARQUET COPY_OPTIONS ('mergeSchema' = 'true')`,
      );
      const kept = await this.ledger.keepRejects(
        target.environment,
        this.name,
        target.pipeline,
        target.pipelineToken,
        [...refused],
      );
      const later = await this.ledger.keepRejects(
        target.environment,
        this.name,
        target.pipeline,
        target.pipelineToken,
        rejects(),
      );
      const result = {
        loaded,
        rejected: kept + later,
        location: `Databricks table ${this.table(s, target)}`,
      };
      await this.ledger.commit(target.environment, this.name, target.pipeline, target.pipelineToken, result);
      return { ...result, alreadyLoaded: false, rejectsLocation: SINK_REJECTS };
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  private async writeParquet(
    file: string,
    target: LoadTarget,
    payloads: AsyncIterable<Payload>,
    progress: (rowsSoFar: number) => void,
  ): Promise<{ loaded: number; refused: RejectedRow[] }> {
    const writer = await openRowWriter('parquet', file, target.columns);
    const convert = target.columns.map((c: SchemaField) => jsValue(c.type));
    const row: unknown[] = new Array(target.columns.length);
    const refused: RejectedRow[] = [];
    let loaded = 0;
    try {
      for await (const payload of payloads) {
        const b = typedBatch(payload);
        for (let r = 0; r < b.lines.length; r++) {
          let unsafe = -1;
          for (let c = 0; c < row.length; c++) {
            const v = b.values[c][r];
            row[c] = v === null ? null : convert[c](v);
            if (typeof v === 'bigint') unsafe = c;
          }
          if (unsafe >= 0 && refused.length < 100_000) {
            refused.push({
              line: b.lines[r],
              stage: this.processName,
              reason: `${target.columns[unsafe].name}: ${String(row[unsafe])} is beyond ±2^53, which the Parquet writer cannot store exactly`,
              raw: rowText(b, r),
            });
            continue;
          }
          await writer.write(row);
          loaded++;
        }
        progress(loaded);
      }
    } finally {
      await writer.close();
    }
    return { loaded, refused };
  }

  private table(s: DatabricksSettings, target: LoadTarget): string {
    return `${quote(s.catalog)}.${quote(s.schema)}.${quote(targetOf(target.destination).table)}`;
  }

  private async settings(target: LoadTarget): Promise<DatabricksSettings> {
    const d = targetOf(target.destination);
    try {
      return databricksSettings(d.secretName, await this.secrets.reveal(target.environment, d.secretName));
    } catch (err) {
      if (err instanceof SecretNotFoundError)
        throw new ValidationError(`secret '${d.secretName}' of destination.databricks does not exist`);
      throw err;
    }
  }
}

function targetOf(destination: PipelineDefinition['destination']): DatabricksTarget {
  const d = destination.databricks as DatabricksTarget | undefined;
  if (!d) throw new ValidationError('the pipeline has no destination.databricks');
  return d;
}

function typedBatch(p: Payload): TypedBatch {
  if (typeof p === 'object' && p !== null && 'values' in p && 'lines' in p) return p as TypedBatch;
  throw new ServiceUnavailableError('databricks', 'the Databricks destination receives typed batches');
}
