import { Injectable } from '@nestjs/common';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FieldType, PipelineDefinition, SchemaField } from '@tapyard/model';
import { Destination, LoadResult, LoadTarget, Payload, RejectedRow } from '../destination';

import { Delivery, Sink, sectionOf } from '../sinks/sink';
import { writeRowFile } from '../typed-rows';
import { warehouseDecimal } from '../objectstore/parquet-decimal';
import { DatabricksApi, DatabricksSettings, databricksSettings } from './databricks-api';
import { DatabricksTarget } from './section';

// decimal: see sqlType.
const SQL_TYPES: Record<Exclude<FieldType, 'decimal'>, string> = {
  boolean: 'BOOLEAN',
  int: 'INT',
  bigint: 'BIGINT',
  float: 'FLOAT',
  double: 'DOUBLE',
  string: 'STRING',
  date: 'DATE',
  timestamp: 'TIMESTAMP',
};

const sqlType = (c: SchemaField): string =>
  c.type === 'decimal' ? warehouseDecimal(c, 'Databricks', 'DECIMAL') : SQL_TYPES[c.type];

const quote = (name: string): string => `\`${name.replace(/`/g, '``')}\``;

/**
 * DatabricksLoader: the job's rows as one Parquet file staged in a Unity Catalog volume under a
 * job-scoped name (`tapyard/<pipeline>/job=<pipelineToken>/part-00000.parquet`), then `COPY INTO` the
 * table through the SQL Statement Execution API. Exactly once: COPY INTO skips files it has loaded
 * (the warehouse's own load history), a redelivery stages the same name, and a finished job is
 * recorded and never loaded again. New columns reach the table through `mergeSchema`.
 */
@Injectable()
export class DatabricksDestination extends Sink implements Destination {
  readonly name = 'databricks';
  readonly processName = 'DatabricksLoader' as const;

  describe(destination: PipelineDefinition['destination']): string {
    return `Databricks table ${targetOf(destination).table}`;
  }

  protected async reach(target: LoadTarget, d: Delivery): Promise<void> {
    await this.api(target, await this.settings(target), d).sql('SELECT 1');
  }

  protected async ready(target: LoadTarget, d: Delivery): Promise<void> {
    const s = await this.settings(target);
    const columns = target.columns.map((c) => `${quote(c.name)} ${sqlType(c)}`).join(', ');
    await this.api(target, s, d).sql(`CREATE TABLE IF NOT EXISTS ${this.table(s, target)} (${columns})`);
  }

  protected async deliver(
    target: LoadTarget,
    payloads: AsyncIterable<Payload>,
    rejects: () => AsyncIterable<RejectedRow>,
    progress: (rowsSoFar: number) => void,
    d: Delivery,
  ): Promise<LoadResult> {
    const s = await this.settings(target);
    const api = this.api(target, s, d);
    const work = await mkdtemp(join(tmpdir(), 'tapyard-databricks-'));
    try {
      const file = join(work, 'part-00000.parquet');
      const refused = this.refusals(target);
      const loaded = await writeRowFile('parquet', file, target, payloads, progress, this.processName, (r) =>
        refused.add(r),
      );
      const dir = `tapyard/${target.pipeline}/job=${target.pipelineToken}`;
      // Memory: the Parquet file of one job is read whole for the upload (the Files API takes one body).
      const volumePath = await api.upload(`${dir}/part-00000.parquet`, await readFile(file));
      await api.sql(
        `COPY INTO ${this.table(s, target)} FROM '${volumePath.replace(/\/part-00000\.parquet$/, '/')}' ` +
          `FILEFORMAT = PARQUET COPY_OPTIONS ('mergeSchema' = 'true')`,
      );
      return await this.finish(
        target,
        loaded,
        refused,
        rejects,
        `Databricks table ${this.table(s, target)}`,
        d,
      );
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  private api(target: LoadTarget, s: DatabricksSettings, d: Delivery): DatabricksApi {
    return new DatabricksApi(s, this.policy(target), d, this.bounds.requestTimeoutMs);
  }

  private table(s: DatabricksSettings, target: LoadTarget): string {
    return `${quote(s.catalog)}.${quote(s.schema)}.${quote(targetOf(target.destination).table)}`;
  }

  private async settings(target: LoadTarget): Promise<DatabricksSettings> {
    const d = targetOf(target.destination);
    return databricksSettings(d.secretName, await this.sectionSecret(target.environment, d.secretName));
  }
}

function targetOf(destination: PipelineDefinition['destination']): DatabricksTarget {
  return sectionOf<DatabricksTarget>(destination, 'databricks');
}
