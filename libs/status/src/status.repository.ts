import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { JobRef, JobRow, JobRows, JobScope, JobStatus, ProcessName, StageState } from './status.types';

export interface EventRow {
  id: string;
  pipeline: string;
  pipeline_token: string;
  publisher_token: string | null;
  filename: string;
  process_name: string;
  state: StageState;
  description: string;
  epoch: string;
}

const JOB_COLUMNS = `pipeline_token, pipeline, publisher_token, filename, status, last_process, last_state,
  started_at, last_event_at, ended_at, last_error_process, last_error_description, scope, rows_loaded, rows_rejected`;

/** One event as written: `epoch` is when it happened, which may be before the batch holding it is written. */
export interface RecordedEvent {
  processName: ProcessName;
  state: StageState;
  description: string;
  epoch: number;
  outcome: JobStatus | null;
  rows: JobRows | null;
  /**
   * Written once: skipped when its job already has this process, state and time (an upload's intake
   * entries, which the API writes and its job carries; see CarriedEntry).
   */
  once?: true;
}

/** The events of one or more jobs to write together: each job's in order. */
export interface JobBatch {
  job: JobRef;
  events: readonly RecordedEvent[];
}

@Injectable()
export class StatusRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Appends the events, in order, and folds each into the job's summary row. The latest event decides
   * the job status: an explicit outcome, `error` for an error event, otherwise `processing`. A job's
   * terminal event is final: once the summary row has ended, nothing more of the job is written (a late
   * stage, a redelivery, a second worker, the rest of this batch) and the events are dropped. The per-job
   * lock serialises every writer of the job on any host, so of two racing terminal events exactly one
   * is written; the write reads a snapshot taken after every lock of it was granted, so it sees the end
   * the previous holder wrote. Several jobs' events may go in one write (see StatusBatcher): their locks
   * are taken in one order (by key), so two writers holding some of the same jobs cannot deadlock.
   */
  async record(batches: readonly JobBatch[]): Promise<void> {
    const columns: (string | number | boolean | null)[][] = Array.from({ length: 14 }, () => []);
    for (const { job, events } of batches) {
      for (const e of events) {
        const status = e.outcome ?? (e.state === 'error' ? 'error' : 'processing');
        [
          job.environment,
          job.pipeline,
          job.pipelineToken,
          job.publisherToken,
          job.filename,
          e.processName,
          e.state,
          e.description,
          e.epoch,
          status,
          status !== 'processing',
          e.rows?.loaded ?? null,
          e.rows?.rejected ?? null,
          e.once === true,
        ].forEach((v, i) => columns[i].push(v));
      }
    }
    if (columns[0].length === 0) return;
    const keys = [...new Set(batches.map((b) => `${b.job.environment}:${b.job.pipelineToken}`))].sort();
    // One round trip whatever the number of events and jobs, in one implicit transaction (the locks
    // are held to its end, an error rolls it all back); the function's statements are planned once per
    // connection (migration 1765084800000).
    const params = [keys, ...columns];
    await this.db.query(
      `SELECT tapyard.record_events(${params.map((_, i) => `$${i + 1}`).join(', ')})`,
      params,
    );
  }

  /** The pipeline a job loaded for, and whether it ended; null when no job has the token. */
  async job(
    environment: string,
    pipelineToken: string,
  ): Promise<{ pipeline: string; ended: boolean; scope: JobScope | null } | null> {
    const rows: { pipeline: string; ended: boolean; scope: JobScope | null }[] = await this.db.query(
      `SELECT pipeline, ended_at IS NOT NULL AS ended, scope FROM tapyard.jobs WHERE environment = $1 AND pipeline_token = $2`,
      [environment, pipelineToken],
    );
    return rows[0] ?? null;
  }

  /** Whether the job's terminal event is written: a delivery of it then has nothing left to do. */
  async ended(environment: string, pipelineToken: string): Promise<boolean> {
    const rows = await this.named(
      'tapyard-job-ended',
      `SELECT 1 FROM tapyard.jobs WHERE environment = $1 AND pipeline_token = $2 AND ended_at IS NOT NULL`,
      [environment, pipelineToken],
    );
    return rows.length > 0;
  }

  /**
   * The summary rows and the events of a job or of a publisher token in one round trip: this is
   * what every rollup poll reads, so it stays a single indexed query.
   */
  async jobsAndEvents(
    environment: string,
    by: 'pipeline_token' | 'publisher_token',
    token: string,
  ): Promise<{ jobs: JobRow[]; events: EventRow[] }> {
    const rows = await this.named<{ jobs: JobRow[]; events: EventRow[] }>(
      `tapyard-jobs-and-events-${by}`,
      `SELECT
         (SELECT coalesce(json_agg(j ORDER BY j.started_at), '[]') FROM
           (SELECT ${JOB_COLUMNS} FROM tapyard.jobs WHERE environment = $1 AND ${by} = $2) j) AS jobs,
         (SELECT coalesce(json_agg(e ORDER BY e.id), '[]') FROM
           (SELECT * FROM tapyard.status_events WHERE environment = $1 AND ${by} = $2) e) AS events`,
      [environment, token],
    );
    return rows[0];
  }

  events(environment: string, by: 'pipeline_token' | 'publisher_token', token: string): Promise<EventRow[]> {
    return this.db.query(
      `SELECT * FROM tapyard.status_events WHERE environment = $1 AND ${by} = $2 ORDER BY id`,
      [environment, token],
    );
  }

  /** The jobs a token selects, with their scope (for filtering what a caller may see). */
  jobScopes(
    environment: string,
    by: 'pipeline_token' | 'publisher_token',
    token: string,
  ): Promise<Pick<JobRow, 'pipeline_token' | 'scope'>[]> {
    return this.db.query(
      `SELECT pipeline_token, scope FROM tapyard.jobs WHERE environment = $1 AND ${by} = $2`,
      [environment, token],
    );
  }

  /**
   * Claims a caller-chosen publisher token for a catalog ('' for uncataloged) on its first use; answers
   * the catalog that holds it, which differs from `catalog` when another catalog claimed it first.
   */
  async claimPublisherToken(environment: string, token: string, catalog: string): Promise<string> {
    const rows: { catalog: string }[] = await this.db.query(
      `WITH claim AS (
         INSERT INTO tapyard.publisher_tokens (environment, token, catalog) VALUES ($1, $2, $3)
         ON CONFLICT (environment, token) DO NOTHING RETURNING catalog)
       SELECT catalog FROM claim
       UNION ALL SELECT catalog FROM tapyard.publisher_tokens WHERE environment = $1 AND token = $2
       LIMIT 1`,
      [environment, token, catalog],
    );
    return rows[0]?.catalog ?? catalog;
  }

  jobsOfPipeline(environment: string, pipeline: string, limit: number, offset: number): Promise<JobRow[]> {
    return this.db.query(
      `SELECT ${JOB_COLUMNS} FROM tapyard.jobs WHERE environment = $1 AND pipeline = $2
       ORDER BY started_at DESC, pipeline_token LIMIT $3 OFFSET $4`,
      [environment, pipeline, limit, offset],
    );
  }

  /** Jobs of every pipeline of the environment, newest first. */
  recentJobs(environment: string, limit: number, offset: number): Promise<JobRow[]> {
    return this.db.query(
      `SELECT ${JOB_COLUMNS} FROM tapyard.jobs WHERE environment = $1
       ORDER BY started_at DESC, pipeline_token LIMIT $2 OFFSET $3`,
      [environment, limit, offset],
    );
  }

  /**
   * A statement every job or status poll runs, named: PostgreSQL plans it once per connection of the
   * pool instead of on every call (the rollup's read took ~0.5 ms of planning a poll). TypeORM's
   * query() cannot name a statement; its driver's pool can.
   */
  private async named<T>(name: string, text: string, values: unknown[]): Promise<T[]> {
    const pool = (this.db.driver as PostgresDriver).master as Pool;
    return (await pool.query<T & object>({ name, text, values })).rows;
  }

  /** Removes every event and summary of the environment; returns how many rows went. */
  async deleteAll(environment: string): Promise<number> {
    return this.db.transaction(async (m) => {
      const events = await m.query(`DELETE FROM tapyard.status_events WHERE environment = $1`, [environment]);
      const jobs = await m.query(`DELETE FROM tapyard.jobs WHERE environment = $1`, [environment]);
      await m.query(`DELETE FROM tapyard.publisher_tokens WHERE environment = $1`, [environment]);
      return Number(events[1] ?? 0) + Number(jobs[1] ?? 0);
    });
  }
}
