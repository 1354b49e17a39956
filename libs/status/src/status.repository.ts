import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { escapeLiteral } from 'pg';
import { DataSource } from 'typeorm';
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

/**
 * The scope fields of the job's pipeline as it is when the job begins (see pipelineScope()): the job
 * keeps them, so its status stays with that catalog whatever later happens to the pipeline's name.
 */
const PIPELINE_SCOPE = `(SELECT jsonb_build_object('catalog', p.catalog,
    'database', p.definition->'destination'->'database'->>'dbName',
    'type', p.definition->'source'->'fileAttributes'->>'format')
  FROM tapyard.pipelines p WHERE p.environment = $1 AND p.name = $2)`;

/**
 * The first key of the per-job advisory locks. Two-key advisory locks never collide with the one-key
 * locks used elsewhere (migrations, users, codegen), so a job's writers wait only for each other.
 */
const JOB_LOCK_SPACE = 0x54594a42;

/** One event as written: `epoch` is when it happened, which may be before the batch holding it is written. */
export interface RecordedEvent {
  processName: ProcessName;
  state: StageState;
  description: string;
  epoch: number;
  outcome: JobStatus | null;
  rows: JobRows | null;
}

/** One event into the job's events and its summary row, unless the job has ended ($11: terminal). */
const RECORD_EVENT = `WITH open AS (
    SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM tapyard.jobs
      WHERE environment = $1 AND pipeline_token = $3 AND ended_at IS NOT NULL)
  ), ev AS (
    INSERT INTO tapyard.status_events
      (environment, pipeline, pipeline_token, publisher_token, filename, process_name, state, description, epoch)
    SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9 FROM open
  )
  INSERT INTO tapyard.jobs AS j (environment, pipeline_token, pipeline, publisher_token, filename, status,
    last_process, last_state, started_at, last_event_at, ended_at, last_error_process, last_error_description,
    scope, rows_loaded, rows_rejected)
  SELECT $1, $3, $2, $4, $5, $10, $6, $7, $9, $9, CASE WHEN $11 THEN $9::bigint END,
    CASE WHEN $7 = 'error' THEN $6 END, CASE WHEN $7 = 'error' THEN $8 END, ${PIPELINE_SCOPE},
    $12::bigint, $13::bigint FROM open
  ON CONFLICT (environment, pipeline_token) DO UPDATE SET
    status = EXCLUDED.status,
    last_process = EXCLUDED.last_process,
    last_state = EXCLUDED.last_state,
    last_event_at = GREATEST(j.last_event_at, EXCLUDED.last_event_at),
    ended_at = CASE WHEN $11 THEN EXCLUDED.last_event_at END,
    last_error_process = COALESCE(EXCLUDED.last_error_process, j.last_error_process),
    last_error_description = COALESCE(EXCLUDED.last_error_description, j.last_error_description),
    rows_loaded = COALESCE(EXCLUDED.rows_loaded, j.rows_loaded),
    rows_rejected = COALESCE(EXCLUDED.rows_rejected, j.rows_rejected)`;

@Injectable()
export class StatusRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Appends the events, in order, and folds each into the job's summary row. The latest event decides
   * the job status: an explicit outcome, `error` for an error event, otherwise `processing`. A job's
   * terminal event is final: once the summary row has ended, nothing more of the job is written (a late
   * stage, a redelivery, a second worker, the rest of this batch) and the events are dropped. The per-job
   * lock serialises every writer of the job on any host, so of two racing terminal events exactly one
   * is written; each statement reads a snapshot taken after the lock was granted (and after the
   * statements before it), so it sees the end the previous holder, or this batch, wrote.
   */
  async record(job: JobRef, events: readonly RecordedEvent[]): Promise<void> {
    if (events.length === 0) return;
    // One message, one round trip whatever the number of events: its statements share an implicit
    // transaction (the lock is held to its end, an error rolls it all back). Without parameters,
    // values are literals.
    const statements = events.map((e) => {
      const status = e.outcome ?? (e.state === 'error' ? 'error' : 'processing');
      return inline(RECORD_EVENT, [
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
      ]);
    });
    await this.db.query(
      `SELECT pg_advisory_xact_lock(${JOB_LOCK_SPACE}, hashtext(${literal(`${job.environment}:${job.pipelineToken}`)}));
       ${statements.join(';\n')}`,
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
    const rows: unknown[] = await this.db.query(
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
    const rows: { jobs: JobRow[]; events: EventRow[] }[] = await this.db.query(
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

function literal(v: string | number | boolean | null): string {
  if (v === null) return 'NULL';
  if (typeof v === 'boolean') return v ? 'TRUE' : 'FALSE';
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new Error(`not a finite number: ${v}`);
    return String(v);
  }
  return escapeLiteral(v);
}

/** `$n` placeholders of a statement replaced by the values as literals (for a multi-statement message). */
function inline(sql: string, values: (string | number | boolean | null)[]): string {
  return sql.replace(/\$(\d+)(?!\d)/g, (_, n: string) => literal(values[Number(n) - 1]));
}
