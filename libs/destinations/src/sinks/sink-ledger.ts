import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { LoadResult, RejectedRow } from '../destination';

const REJECT_BATCH = 500;

/** Where sinks keep refused rows, as status messages name it. */
export const SINK_REJECTS = 'the platform table tapyard.sink_rejects';

/**
 * What sinks record of their deliveries (see migration SinkLoads): a job's finished delivery, which a
 * redelivery finds and skips, and the rows a sink refused with the reason.
 */
@Injectable()
export class SinkLedger {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async committed(
    environment: string,
    destination: string,
    pipelineToken: string,
  ): Promise<LoadResult | null> {
    const rows = (await this.db.query(
      `SELECT loaded::text, rejected::text, location FROM tapyard.sink_loads
        WHERE environment = $1 AND destination = $2 AND pipeline_token = $3`,
      [environment, destination, pipelineToken],
    )) as { loaded: string; rejected: string; location: string }[];
    const r = rows[0];
    return r
      ? { loaded: Number(r.loaded), rejected: Number(r.rejected), alreadyLoaded: true, location: r.location }
      : null;
  }

  async commit(
    environment: string,
    destination: string,
    pipeline: string,
    pipelineToken: string,
    result: { loaded: number; rejected: number; location: string },
  ): Promise<void> {
    await this.db.query(
      `INSERT INTO tapyard.sink_loads (environment, destination, pipeline, pipeline_token, loaded, rejected, location)
       VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
      [environment, destination, pipeline, pipelineToken, result.loaded, result.rejected, result.location],
    );
  }

  /** Keeps refused rows, streamed in batches (nothing proportional to the input held). */
  async keepRejects(
    environment: string,
    destination: string,
    pipeline: string,
    pipelineToken: string,
    rows: AsyncIterable<RejectedRow> | RejectedRow[],
  ): Promise<number> {
    let batch: RejectedRow[] = [];
    let count = 0;
    const flush = async (): Promise<void> => {
      if (batch.length === 0) return;
      const values: unknown[] = [];
      const tuples = batch.map((r, i) => {
        values.push(r.line, r.stage, r.reason.slice(0, 2000), r.raw.slice(0, 4000));
        const b = i * 4 + 5;
        return `($1, $2, $3, $4, $${b}, $${b + 1}, $${b + 2}, $${b + 3})`;
      });
      await this.db.query(
        `INSERT INTO tapyard.sink_rejects (environment, destination, pipeline, pipeline_token, line, stage, reason, raw)
         VALUES ${tuples.join(', ')}`,
        [environment, destination, pipeline, pipelineToken, ...values],
      );
      count += batch.length;
      batch = [];
    };
    for await (const r of rows) {
      batch.push(r);
      if (batch.length >= REJECT_BATCH) await flush();
    }
    await flush();
    return count;
  }

  /** Refused rows kept for a pipeline at a sink, oldest first (for tests and support). */
  async rejects(
    environment: string,
    destination: string,
    pipeline: string,
  ): Promise<{ line: number; reason: string }[]> {
    return (await this.db.query(
      `SELECT line, reason FROM tapyard.sink_rejects WHERE environment = $1 AND destination = $2 AND pipeline = $3 ORDER BY id`,
      [environment, destination, pipeline],
    )) as { line: number; reason: string }[];
  }

  /** deleteData: the pipeline's kept rejects and delivery records go; returns how many rejects there were. */
  async forgetPipeline(environment: string, pipeline: string): Promise<number> {
    const gone = (await this.db.query(
      `WITH d AS (DELETE FROM tapyard.sink_rejects WHERE environment = $1 AND pipeline = $2 RETURNING 1) SELECT count(*)::int AS n FROM d`,
      [environment, pipeline],
    )) as { n: number }[];
    await this.db.query(`DELETE FROM tapyard.sink_loads WHERE environment = $1 AND pipeline = $2`, [
      environment,
      pipeline,
    ]);
    return gone[0]?.n ?? 0;
  }
}
