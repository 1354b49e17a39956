import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { ValidationError } from '@tapyard/core';
import { TapErrorCode } from './tap-errors';

/** GET /tap/state: the tap's current (last committed) state. */
export interface TapStateView {
  name: string;
  /** null: never set, or reset. */
  state: Record<string, unknown> | null;
  committedAt: string | null;
  /** The job whose load committed it; null when set through the API or by a run that loaded nothing. */
  pipelineToken: string | null;
  /** 0 before the first version. */
  version: number;
}

export type TapStateStatus = 'pending' | 'committed' | 'discarded';

/** GET /tap/state/history: one version, newest first. */
export interface TapStateVersion {
  version: number;
  state: Record<string, unknown> | null;
  status: TapStateStatus;
  /** `run`: a run's fetch(state) left it; `put`: set or reset through the API. */
  source: 'run' | 'put';
  runId: string | null;
  pipelineTokens: string[];
  createdAt: string;
  committedAt: string | null;
  /** Why a discarded version was not committed. */
  reason: string | null;
}

/** Versions kept per tap besides the current one and those still pending. */
export const STATE_HISTORY_LIMIT = 100;
/** The harness refuses larger states; the API holds a PUT to the same bound. */
export const MAX_STATE_BYTES = 64 * 1024;

interface StateRow {
  version: number;
  state: Record<string, unknown> | null;
  status: TapStateStatus;
  source: 'run' | 'put';
  run_id: string | null;
  pipeline_tokens: string[];
  created_at: Date;
  committed_at: Date | null;
  reason: string | null;
}

/** An escaped NUL in JSON text (after an even run of backslashes): PostgreSQL's jsonb cannot hold one. */
const ESCAPED_NUL = /(?<!\\)(?:\\\\)*\\u0000/;

/** Per-tap advisory locks (two keys, apart from the one-key locks elsewhere): versions are numbered in order. */
const STATE_LOCK_SPACE = 0x54535453;

/**
 * Incremental state of taps, versioned per tap in Postgres. A run's new state waits (`pending`) for
 * the jobs its records went to and is settled from their terminal status in tapyard.jobs, whichever
 * worker on whichever host wrote it: committed when every job ended loaded (`success`, or `warning`
 * for rejected rows only), discarded as soon as one ended otherwise (a failed or partial load keeps
 * the old bookmark). A job's terminal status is final (StatusRepository.record), so settling gives
 * the same answer whenever it happens and however often; it happens before every read.
 */
@Injectable()
export class TapStates {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async current(environment: string, tap: string): Promise<TapStateView> {
    await this.settle(environment, tap);
    const rows: StateRow[] = await this.db.query(
      `SELECT * FROM tapyard.tap_states WHERE environment = $1 AND tap = $2 AND status = 'committed'
       ORDER BY version DESC LIMIT 1`,
      [environment, tap],
    );
    const row = rows[0];
    return {
      name: tap,
      state: row?.state ?? null,
      committedAt: row?.committed_at?.toISOString() ?? null,
      pipelineToken: row?.pipeline_tokens.at(-1) ?? null,
      version: row?.version ?? 0,
    };
  }

  async history(environment: string, tap: string): Promise<TapStateVersion[]> {
    await this.settle(environment, tap);
    const rows: StateRow[] = await this.db.query(
      `SELECT * FROM tapyard.tap_states WHERE environment = $1 AND tap = $2 ORDER BY version DESC`,
      [environment, tap],
    );
    return rows.map((r) => ({
      version: r.version,
      state: r.state,
      status: r.status,
      source: r.source,
      runId: r.run_id,
      pipelineTokens: r.pipeline_tokens,
      createdAt: r.created_at.toISOString(),
      committedAt: r.committed_at?.toISOString() ?? null,
      reason: r.reason,
    }));
  }

  /** PUT /tap/state: sets (an object) or resets (null) the state as a new committed version. */
  async set(environment: string, tap: string, state: unknown): Promise<TapStateView> {
    if (state !== null && (typeof state !== 'object' || Array.isArray(state))) {
      throw new ValidationError('state must be a JSON object, or null to reset it', [
        { field: 'state', problem: 'is not an object or null' },
      ]).coded(TapErrorCode.InvalidState);
    }
    const text = JSON.stringify(state);
    if (ESCAPED_NUL.test(text)) {
      throw new ValidationError('state holds a NUL character (\\u0000), which cannot be stored', [
        { field: 'state', problem: 'holds a NUL character' },
      ]).coded(TapErrorCode.InvalidState);
    }
    const size = Buffer.byteLength(text);
    if (size > MAX_STATE_BYTES) {
      throw new ValidationError(`state is ${size} bytes of JSON; at most ${MAX_STATE_BYTES} are kept`, [
        { field: 'state', problem: `is larger than ${MAX_STATE_BYTES} bytes` },
      ]).coded(TapErrorCode.InvalidState);
    }
    await this.append(environment, tap, (m, version) =>
      m.query(
        `INSERT INTO tapyard.tap_states (environment, tap, version, state, status, source, committed_at)
         VALUES ($1, $2, $3, $4, 'committed', 'put', now())`,
        [environment, tap, version, state === null ? null : JSON.stringify(state)],
      ),
    );
    return this.current(environment, tap);
  }

  /**
   * A run's new state, computed from version `base`. With jobs it waits for them; without (the run
   * loaded nothing because there was nothing to load) it is committed at once. A state set through
   * the API while the run ran wins: the run's, computed from the older one, is discarded.
   */
  async recordRun(
    environment: string,
    tap: string,
    run: { runId: string; base: number; state: Record<string, unknown>; pipelineTokens: string[] },
  ): Promise<TapStateStatus> {
    let status: TapStateStatus = run.pipelineTokens.length > 0 ? 'pending' : 'committed';
    await this.append(environment, tap, async (m, version) => {
      const reset: unknown[] = await m.query(
        `SELECT 1 FROM tapyard.tap_states
         WHERE environment = $1 AND tap = $2 AND source = 'put' AND version > $3 LIMIT 1`,
        [environment, tap, run.base],
      );
      if (reset.length > 0) status = 'discarded';
      await m.query(
        `INSERT INTO tapyard.tap_states
           (environment, tap, version, state, status, source, run_id, pipeline_tokens, committed_at, reason)
         VALUES ($1, $2, $3, $4, $5, 'run', $6, $7, CASE WHEN $9 THEN now() END, $8)`,
        [
          environment,
          tap,
          version,
          JSON.stringify(run.state),
          status,
          run.runId,
          run.pipelineTokens,
          status === 'discarded' ? 'the state was set through PUT /tap/state while this run ran' : null,
          status === 'committed',
        ],
      );
    });
    return status;
  }

  /** Pending versions whose jobs have all ended are committed or discarded; the rest keep waiting. */
  private async settle(environment: string, tap: string): Promise<void> {
    await this.db.query(
      `WITH verdict AS (
         SELECT s.version,
           count(j.pipeline_token) = cardinality(s.pipeline_tokens) AND bool_and(j.ended_at IS NOT NULL) AS ended,
           coalesce(bool_or(j.ended_at IS NOT NULL AND NOT ${LOADED}), false) AS failed,
           max(j.ended_at) AS ended_at,
           string_agg(CASE WHEN j.ended_at IS NOT NULL AND NOT ${LOADED} THEN
             'job ' || j.pipeline_token || ' ended ' || j.status ||
             coalesce(' (' || j.last_error_process || ': ' || left(j.last_error_description, 300) || ')', '')
           END, '; ') AS why
         FROM tapyard.tap_states s
         LEFT JOIN tapyard.jobs j ON j.environment = s.environment AND j.pipeline_token = ANY (s.pipeline_tokens)
         WHERE s.environment = $1 AND s.tap = $2 AND s.status = 'pending'
         GROUP BY s.version, s.pipeline_tokens
       )
       UPDATE tapyard.tap_states t SET
         status = CASE WHEN v.failed THEN 'discarded' ELSE 'committed' END,
         committed_at = CASE WHEN v.failed THEN NULL ELSE to_timestamp(v.ended_at / 1000.0) END,
         reason = CASE WHEN v.failed THEN 'its load did not commit: ' || v.why END
       FROM verdict v
       WHERE t.environment = $1 AND t.tap = $2 AND t.version = v.version AND t.status = 'pending'
         AND (v.failed OR v.ended)`,
      [environment, tap],
    );
  }

  /** Writes the next version under the tap's lock, then trims the history. */
  private async append(
    environment: string,
    tap: string,
    write: (m: EntityManager, version: number) => Promise<unknown>,
  ): Promise<void> {
    await this.db.transaction(async (m) => {
      await m.query(`SELECT pg_advisory_xact_lock(${STATE_LOCK_SPACE}, hashtext($1))`, [
        `${environment}:${tap}`,
      ]);
      const [{ next }]: { next: number }[] = await m.query(
        `SELECT coalesce(max(version), 0) + 1 AS next FROM tapyard.tap_states WHERE environment = $1 AND tap = $2`,
        [environment, tap],
      );
      await write(m, next);
      // Old versions go, but never the current one or one still waiting for its load.
      await m.query(
        `DELETE FROM tapyard.tap_states WHERE environment = $1 AND tap = $2 AND status <> 'pending'
           AND version <= $3 - ${STATE_HISTORY_LIMIT}
           AND version <> coalesce((SELECT max(version) FROM tapyard.tap_states
             WHERE environment = $1 AND tap = $2 AND status = 'committed'), 0)`,
        [environment, tap, next],
      );
    });
  }
}

/**
 * A job that ended loaded: `success`, or `warning` with no stage error (rows rejected, kept in the
 * rejects table). A destination that failed beside others that loaded is a partial load.
 */
const LOADED = `(j.status IN ('success', 'warning') AND j.last_error_process IS NULL)`;
