import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { LedgerEntry, PersistedReason, RUN_HISTORY_LIMIT, RunLogEntry, TapConfig } from './tap.types';

interface RunRow {
  run_id: string;
  tap: string;
  mode: RunLogEntry['mode'];
  trigger: RunLogEntry['trigger'];
  status: RunLogEntry['status'];
  started_at: Date;
  finished_at: Date | null;
  duration_ms: number | null;
  record_count: string;
  persisted: boolean;
  persisted_reason: PersistedReason | null;
  publisher_token: string | null;
  error: string | null;
}

interface LedgerRow {
  uri: string;
  filename: string;
  content_hash: string;
  staged_path: string;
  pipeline_token: string;
  processed_at: Date;
}

/** A stored configuration with the fields added since it was saved. */
function stored(config: TapConfig): TapConfig {
  return { ...config, timezone: config.timezone ?? 'UTC' };
}

/** TypeORM answers UPDATE and DELETE with `[rows, affected]`, INSERT and SELECT with the rows. */
function returned<T>(result: unknown): T[] {
  return (
    Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) ? result[0] : result
  ) as T[];
}

export interface DueTap {
  environment: string;
  config: TapConfig;
  nextFireAt: Date;
}

/** Postgres access for taps, their run history and document ledgers (schema `tapyard`). */
@Injectable()
export class TapsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async find(environment: string, name: string): Promise<TapConfig | null> {
    const rows: { config: TapConfig }[] = await this.db.query(
      `SELECT config FROM tapyard.taps WHERE environment = $1 AND name = $2`,
      [environment, name],
    );
    return rows[0] ? stored(rows[0].config) : null;
  }

  /** The tap's grant (see tap-grants.ts); null when saved before grants existed, undefined when no such tap. */
  async grant(environment: string, name: string): Promise<string[] | null | undefined> {
    const rows: { grant: string[] | null }[] = await this.db.query(
      `SELECT "grant" FROM tapyard.taps WHERE environment = $1 AND name = $2`,
      [environment, name],
    );
    return rows.length === 0 ? undefined : rows[0].grant;
  }

  async list(environment: string): Promise<TapConfig[]> {
    const rows: { config: TapConfig }[] = await this.db.query(
      `SELECT config FROM tapyard.taps WHERE environment = $1 ORDER BY name`,
      [environment],
    );
    return rows.map((r) => stored(r.config));
  }

  /** Taps of an environment that feed a pipeline. */
  async targeting(environment: string, pipeline: string): Promise<TapConfig[]> {
    const rows: { config: TapConfig }[] = await this.db.query(
      `SELECT config FROM tapyard.taps WHERE environment = $1 AND config->>'targetPipeline' = $2`,
      [environment, pipeline],
    );
    return rows.map((r) => stored(r.config));
  }

  /**
   * Inserts or replaces. `nextFireAt` undefined keeps the schedule claim as it is (the schedule did
   * not change); a value (or null) resets it, so a changed schedule takes effect at its next tick.
   */
  async upsert(
    environment: string,
    config: TapConfig,
    nextFireAt: Date | null | undefined,
    grant: string[],
  ): Promise<void> {
    await this.db.query(
      `INSERT INTO tapyard.taps (environment, name, config, next_fire_at, "grant") VALUES ($1, $2, $3, $4, $6)
       ON CONFLICT (environment, name) DO UPDATE SET config = EXCLUDED.config, updated_at = now(),
         "grant" = EXCLUDED."grant",
         next_fire_at = CASE WHEN $5 THEN EXCLUDED.next_fire_at ELSE tapyard.taps.next_fire_at END`,
      [
        environment,
        config.name,
        JSON.stringify(config),
        nextFireAt ?? null,
        nextFireAt !== undefined,
        JSON.stringify(grant),
      ],
    );
  }

  /** The configuration alone (schedule and grant untouched): where its script lives moved. */
  async updateConfig(environment: string, config: TapConfig): Promise<void> {
    await this.db.query(
      `UPDATE tapyard.taps SET config = $3, updated_at = now() WHERE environment = $1 AND name = $2`,
      [environment, config.name, JSON.stringify(config)],
    );
  }

  /**
   * The tap, its run history, its state versions and its document ledger, all or nothing (a failed delete leaves the
   * ledger with its tap); returns the ledger entries it removed, whose staged objects are the caller's.
   */
  async delete(environment: string, name: string): Promise<LedgerEntry[]> {
    return this.db.transaction(async (m) => {
      const ledger = returned<LedgerRow>(
        await m.query(
          `DELETE FROM tapyard.tap_ledger WHERE environment = $1 AND tap = $2
           RETURNING uri, filename, content_hash, staged_path, pipeline_token, processed_at`,
          [environment, name],
        ),
      );
      await m.query(`DELETE FROM tapyard.tap_runs WHERE environment = $1 AND tap = $2`, [environment, name]);
      await m.query(`DELETE FROM tapyard.tap_states WHERE environment = $1 AND tap = $2`, [
        environment,
        name,
      ]);
      await m.query(`DELETE FROM tapyard.taps WHERE environment = $1 AND name = $2`, [environment, name]);
      return ledger.map(toLedgerEntry);
    });
  }

  /**
   * The debounce claim: succeeds for one caller per window, across every API instance, because the
   * conditional update is atomic. On refusal returns when the previous run started.
   */
  async claimRun(
    environment: string,
    name: string,
    windowMs: number,
  ): Promise<{ claimed: true } | { claimed: false; previous: Date }> {
    const rows = returned<unknown>(
      await this.db.query(
        `UPDATE tapyard.taps SET last_run_at = now()
       WHERE environment = $1 AND name = $2
         AND (last_run_at IS NULL OR last_run_at <= now() - make_interval(secs => $3::double precision / 1000))
       RETURNING name`,
        [environment, name, windowMs],
      ),
    );
    if (rows.length > 0) return { claimed: true };
    const prev: { last_run_at: Date | null }[] = await this.db.query(
      `SELECT last_run_at FROM tapyard.taps WHERE environment = $1 AND name = $2`,
      [environment, name],
    );
    return { claimed: false, previous: prev[0]?.last_run_at ?? new Date() };
  }

  /** Taps whose next fire time has come, in the given environments. */
  async due(environments: string[], now: Date): Promise<DueTap[]> {
    const rows: { environment: string; config: TapConfig; next_fire_at: Date }[] = await this.db.query(
      `SELECT environment, config, next_fire_at FROM tapyard.taps
       WHERE environment = ANY($1) AND next_fire_at IS NOT NULL AND next_fire_at <= $2
       ORDER BY next_fire_at LIMIT 100`,
      [environments, now],
    );
    return rows.map((r) => ({
      environment: r.environment,
      config: stored(r.config),
      nextFireAt: r.next_fire_at,
    }));
  }

  /**
   * Moves a fire time forward only if nobody else did: exactly one worker gets `true` per fire time.
   * The range match absorbs the microseconds Postgres keeps and a JavaScript Date drops.
   */
  async claimFire(environment: string, name: string, fireAt: Date, next: Date | null): Promise<boolean> {
    const rows = returned<unknown>(
      await this.db.query(
        `UPDATE tapyard.taps SET next_fire_at = $4
         WHERE environment = $1 AND name = $2
           AND next_fire_at >= $3 AND next_fire_at < $3::timestamptz + interval '1 millisecond'
         RETURNING name`,
        [environment, name, fireAt, next],
      ),
    );
    return rows.length > 0;
  }

  /**
   * Gives a fire time back after its run was stopped (a worker's shutdown): the tap fires at `fireAt` again,
   * unless its next fire time is no longer the one the claim set (the schedule changed, or another fire
   * happened). `true` when given back.
   */
  async refire(environment: string, name: string, claimed: Date | null, fireAt: Date): Promise<boolean> {
    const rows = returned<unknown>(
      await this.db.query(
        `UPDATE tapyard.taps SET next_fire_at = $4
         WHERE environment = $1 AND name = $2 AND next_fire_at IS NOT DISTINCT FROM $3
         RETURNING name`,
        [environment, name, claimed, fireAt],
      ),
    );
    return rows.length > 0;
  }

  async startRun(environment: string, e: RunLogEntry): Promise<void> {
    await this.db.query(
      `INSERT INTO tapyard.tap_runs (run_id, environment, tap, mode, trigger, status, started_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [e.runId, environment, e.tap, e.mode, e.trigger, e.status, e.startedAt],
    );
  }

  /** Records the outcome and trims the tap's history to the newest RUN_HISTORY_LIMIT runs. */
  async finishRun(environment: string, e: RunLogEntry): Promise<void> {
    await this.db.query(
      `UPDATE tapyard.tap_runs SET status = $2, finished_at = $3, duration_ms = $4, record_count = $5,
         persisted = $6, persisted_reason = $7, publisher_token = $8, error = $9
       WHERE run_id = $1`,
      [
        e.runId,
        e.status,
        e.finishedAt,
        e.durationMs,
        e.recordCount,
        e.persisted,
        e.persistedReason,
        e.publisherToken,
        e.error,
      ],
    );
    await this.db.query(
      `DELETE FROM tapyard.tap_runs WHERE environment = $1 AND tap = $2 AND run_id NOT IN (
         SELECT run_id FROM tapyard.tap_runs WHERE environment = $1 AND tap = $2
         ORDER BY started_at DESC LIMIT ${RUN_HISTORY_LIMIT})`,
      [environment, e.tap],
    );
  }

  /**
   * Runs still `running` long after any run could have ended: the process running them stopped
   * (a restart, a crash). They become `error` saying so. Returns how many.
   */
  async closeAbandonedRuns(environments: string[], olderThanMs: number): Promise<number> {
    const res = returned<unknown>(
      await this.db.query(
        `UPDATE tapyard.tap_runs SET status = 'error', finished_at = now(),
           error = 'the process running this tap stopped before the run finished'
         WHERE environment = ANY($1) AND status = 'running'
           AND started_at < now() - make_interval(secs => $2::double precision / 1000)
         RETURNING run_id`,
        [environments, olderThanMs],
      ),
    );
    return res.length;
  }

  async runs(environment: string, tap: string): Promise<RunLogEntry[]> {
    const rows: RunRow[] = await this.db.query(
      `SELECT * FROM tapyard.tap_runs WHERE environment = $1 AND tap = $2
       ORDER BY started_at DESC LIMIT ${RUN_HISTORY_LIMIT}`,
      [environment, tap],
    );
    return rows.map((r) => ({
      runId: r.run_id,
      tap: r.tap,
      mode: r.mode,
      trigger: r.trigger,
      status: r.status,
      startedAt: r.started_at.toISOString(),
      finishedAt: r.finished_at?.toISOString() ?? null,
      durationMs: r.duration_ms,
      recordCount: Number(r.record_count),
      persisted: r.persisted,
      persistedReason: r.persisted_reason,
      publisherToken: r.publisher_token,
      error: r.error,
    }));
  }

  async ledger(environment: string, tap: string): Promise<LedgerEntry[]> {
    const rows: LedgerRow[] = await this.db.query(
      `SELECT uri, filename, content_hash, staged_path, pipeline_token, processed_at
       FROM tapyard.tap_ledger WHERE environment = $1 AND tap = $2 ORDER BY uri`,
      [environment, tap],
    );
    return rows.map(toLedgerEntry);
  }

  async ledgerEntry(environment: string, tap: string, uri: string): Promise<LedgerEntry | null> {
    const rows: LedgerRow[] = await this.db.query(
      `SELECT uri, filename, content_hash, staged_path, pipeline_token, processed_at
       FROM tapyard.tap_ledger WHERE environment = $1 AND tap = $2 AND uri = $3`,
      [environment, tap, uri],
    );
    return rows[0] ? toLedgerEntry(rows[0]) : null;
  }

  async recordDocument(environment: string, tap: string, target: string, e: LedgerEntry): Promise<void> {
    await this.db.query(
      `INSERT INTO tapyard.tap_ledger
         (environment, tap, uri, filename, content_hash, staged_path, pipeline_token, target_pipeline, processed_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
       ON CONFLICT (environment, tap, uri) DO UPDATE SET filename = EXCLUDED.filename,
         content_hash = EXCLUDED.content_hash, staged_path = EXCLUDED.staged_path,
         pipeline_token = EXCLUDED.pipeline_token, target_pipeline = EXCLUDED.target_pipeline,
         processed_at = EXCLUDED.processed_at`,
      [
        environment,
        tap,
        e.uri,
        e.filename,
        e.contentHash,
        e.stagedPath,
        e.pipelineToken,
        target,
        e.processedAt,
      ],
    );
  }

  /** Removes entries (all of a tap, or one uri) and returns them, so their staged objects can go too. */
  async removeLedger(environment: string, tap: string, uri?: string): Promise<LedgerEntry[]> {
    const rows = returned<LedgerRow>(
      await this.db.query(
        `DELETE FROM tapyard.tap_ledger WHERE environment = $1 AND tap = $2 ${uri === undefined ? '' : 'AND uri = $3'}
       RETURNING uri, filename, content_hash, staged_path, pipeline_token, processed_at`,
        uri === undefined ? [environment, tap] : [environment, tap, uri],
      ),
    );
    return rows.map(toLedgerEntry);
  }
}

function toLedgerEntry(r: LedgerRow): LedgerEntry {
  return {
    uri: r.uri,
    filename: r.filename,
    contentHash: r.content_hash,
    stagedPath: r.staged_path,
    pipelineToken: r.pipeline_token,
    processedAt: r.processed_at.toISOString(),
  };
}
