import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import type { SchemaField } from '@tapyard/model';
import type { CodegenKind } from '@tapyard/scripts';
import {
  NewLive,
  RECORD_COLUMNS,
  authorship,
  RecordRow,
  ScriptRecord,
  ScriptVersion,
  Storage,
  VERSION_COLUMNS,
  VersionRow,
  toRecord,
  toVersion,
} from './script-records';

@Injectable()
export class CodegenRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  async find(environment: string, pipeline: string, kind: CodegenKind): Promise<ScriptRecord | null> {
    const rows = (await this.ds.query(
      `SELECT ${RECORD_COLUMNS} FROM tapyard.codegen_scripts WHERE environment = $1 AND pipeline = $2 AND kind = $3`,
      [environment, pipeline, kind],
    )) as RecordRow[];
    return rows[0] ? toRecord(rows[0]) : null;
  }

  async versions(environment: string, pipeline: string, kind: CodegenKind): Promise<ScriptVersion[]> {
    const rows = (await this.ds.query(
      `SELECT ${VERSION_COLUMNS} FROM tapyard.codegen_script_versions
        WHERE environment = $1 AND pipeline = $2 AND kind = $3 ORDER BY version DESC`,
      [environment, pipeline, kind],
    )) as VersionRow[];
    return rows.map(toVersion);
  }

  async version(
    environment: string,
    pipeline: string,
    kind: CodegenKind,
    version: number,
  ): Promise<ScriptVersion | null> {
    const rows = (await this.ds.query(
      `SELECT ${VERSION_COLUMNS} FROM tapyard.codegen_script_versions
        WHERE environment = $1 AND pipeline = $2 AND kind = $3 AND version = $4`,
      [environment, pipeline, kind, version],
    )) as VersionRow[];
    return rows[0] ? toVersion(rows[0]) : null;
  }

  /**
   * Records a new live script as the next version, in one transaction under the script's lock
   * (two writers number their versions one after the other). Returns the new version number.
   */
  async addLive(environment: string, pipeline: string, kind: CodegenKind, live: NewLive): Promise<number> {
    return this.ds.transaction(async (m) => {
      await this.lock(m, environment, pipeline, kind);
      const top = (await m.query(
        `SELECT coalesce(max(version), 0) AS v FROM tapyard.codegen_script_versions
          WHERE environment = $1 AND pipeline = $2 AND kind = $3`,
        [environment, pipeline, kind],
      )) as { v: number }[];
      const version = Number(top[0].v) + 1;
      await insertVersion(m, environment, pipeline, kind, { ...live, version });
      await m.query(
        `INSERT INTO tapyard.codegen_scripts (environment, pipeline, kind, version, origin, model, generated_at,
           fingerprint, contract_version, output_columns, storage, object_key, repo_path, commit_sha,
           pending_reason, conflict_reason)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11, $12, $13, $14, NULL, NULL)
         ON CONFLICT (environment, pipeline, kind) DO UPDATE SET
           version = EXCLUDED.version, origin = EXCLUDED.origin, model = EXCLUDED.model,
           generated_at = EXCLUDED.generated_at, fingerprint = EXCLUDED.fingerprint,
           contract_version = EXCLUDED.contract_version, output_columns = EXCLUDED.output_columns,
           storage = EXCLUDED.storage, object_key = EXCLUDED.object_key, repo_path = EXCLUDED.repo_path,
           commit_sha = EXCLUDED.commit_sha, pending_reason = NULL, conflict_reason = NULL,
           updated_at = now()`,
        [
          environment,
          pipeline,
          kind,
          version,
          live.origin,
          live.model,
          live.generatedAt,
          live.fingerprint,
          live.contractVersion,
          JSON.stringify(live.outputColumns),
          live.storage,
          live.objectKey,
          live.repoPath,
          live.commitSha,
        ],
      );
      return version;
    });
  }

  /**
   * A script stored before versioning gets number 1 (spec Versioning 5), from its current text; a no-op
   * once it has a number. Returns the record's version.
   */
  async numberFirst(
    environment: string,
    pipeline: string,
    kind: CodegenKind,
    script: string,
  ): Promise<number | null> {
    return this.ds.transaction(async (m) => {
      await this.lock(m, environment, pipeline, kind);
      const rows = (await m.query(
        `SELECT ${RECORD_COLUMNS} FROM tapyard.codegen_scripts
          WHERE environment = $1 AND pipeline = $2 AND kind = $3`,
        [environment, pipeline, kind],
      )) as RecordRow[];
      const r = rows[0];
      if (!r) return null;
      if (r.version !== null) return r.version;
      await insertVersion(m, environment, pipeline, kind, { version: 1, ...authorship(r), script });
      await m.query(
        `UPDATE tapyard.codegen_scripts SET version = 1 WHERE environment = $1 AND pipeline = $2 AND kind = $3`,
        [environment, pipeline, kind],
      );
      return 1;
    });
  }

  /** Marks the entry pending (or ready again with null); creates a record-less placeholder when none exists. */
  async setPending(
    environment: string,
    pipeline: string,
    kind: CodegenKind,
    reason: string | null,
    storage: Storage,
    contractVersion: number,
  ): Promise<void> {
    await this.ds.query(
      `INSERT INTO tapyard.codegen_scripts (environment, pipeline, kind, contract_version, storage, pending_reason)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (environment, pipeline, kind) DO UPDATE SET pending_reason = EXCLUDED.pending_reason,
         updated_at = now()`,
      [environment, pipeline, kind, contractVersion, storage, reason],
    );
  }

  async setConflict(
    environment: string,
    pipeline: string,
    kind: CodegenKind,
    reason: string | null,
  ): Promise<void> {
    await this.ds.query(
      `UPDATE tapyard.codegen_scripts SET conflict_reason = $4, updated_at = now()
        WHERE environment = $1 AND pipeline = $2 AND kind = $3`,
      [environment, pipeline, kind, reason],
    );
  }

  /** Every record and version of a pipeline, when the pipeline is deleted. */
  async deletePipeline(environment: string, pipeline: string): Promise<void> {
    await this.ds.transaction(async (m) => {
      for (const table of [
        'codegen_scripts',
        'codegen_script_versions',
        'landed_samples',
        'codegen_generations',
      ]) {
        await m.query(`DELETE FROM tapyard.${table} WHERE environment = $1 AND pipeline = $2`, [
          environment,
          pipeline,
        ]);
      }
    });
  }

  async saveSample(
    environment: string,
    pipeline: string,
    columns: SchemaField[],
    rows: Record<string, unknown>[],
  ): Promise<void> {
    await this.ds.query(
      `INSERT INTO tapyard.landed_samples (environment, pipeline, columns, rows) VALUES ($1, $2, $3::jsonb, $4::jsonb)
       ON CONFLICT (environment, pipeline) DO UPDATE SET columns = EXCLUDED.columns, rows = EXCLUDED.rows,
         taken_at = now()`,
      [environment, pipeline, JSON.stringify(columns), JSON.stringify(rows)],
    );
  }

  async sample(
    environment: string,
    pipeline: string,
  ): Promise<{ columns: SchemaField[]; rows: Record<string, unknown>[]; recentRatios: number[] } | null> {
    const rows = (await this.ds.query(
      `SELECT columns, rows, recent_ratios FROM tapyard.landed_samples WHERE environment = $1 AND pipeline = $2`,
      [environment, pipeline],
    )) as { columns: SchemaField[]; rows: Record<string, unknown>[]; recent_ratios: number[] }[];
    const r = rows[0];
    return r ? { columns: r.columns, rows: r.rows, recentRatios: r.recent_ratios } : null;
  }

  /** Keeps the output ratio (loaded / read) of the pipeline's last ten jobs, newest first. */
  async addRatio(environment: string, pipeline: string, ratio: number): Promise<void> {
    await this.ds.query(
      `UPDATE tapyard.landed_samples
          SET recent_ratios = (SELECT coalesce(jsonb_agg(v), '[]'::jsonb) FROM (
                SELECT v FROM jsonb_array_elements(jsonb_build_array($3::float8) || recent_ratios)
                  WITH ORDINALITY AS t(v, i) ORDER BY i LIMIT 10) AS kept)
        WHERE environment = $1 AND pipeline = $2`,
      [environment, pipeline, ratio],
    );
  }

  /**
   * Runs `work` while holding the script's writer lock across processes (a session advisory lock on a
   * connection of its own, in a key space apart from addLive's transaction lock, which `work` takes too).
   */
  async exclusively<T>(
    environment: string,
    pipeline: string,
    kind: CodegenKind,
    work: () => Promise<T>,
  ): Promise<T> {
    const runner = this.ds.createQueryRunner();
    await runner.connect();
    const key = `codegen-writer:${environment}:${pipeline}:${kind}`;
    try {
      await runner.query(`SELECT pg_advisory_lock(hashtext($1))`, [key]);
      try {
        return await work();
      } finally {
        await runner.query(`SELECT pg_advisory_unlock(hashtext($1))`, [key]);
      }
    } finally {
      await runner.release();
    }
  }

  /**
   * Marks a model call writing this script for `fingerprint` as `holder`'s. Refused (false) while another
   * holder's mark for the same fingerprint is renewed within `staleSeconds`, unless `force` (an explicit
   * regenerate); a mark for another fingerprint is overtaken (its instruction or columns are gone).
   */
  async markGeneration(
    environment: string,
    pipeline: string,
    kind: CodegenKind,
    fingerprint: string,
    holder: string,
    force: boolean,
    staleSeconds: number,
  ): Promise<boolean> {
    const rows = (await this.ds.query(
      `INSERT INTO tapyard.codegen_generations AS g (environment, pipeline, kind, fingerprint, holder)
       VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (environment, pipeline, kind) DO UPDATE
         SET fingerprint = EXCLUDED.fingerprint, holder = EXCLUDED.holder, renewed_at = now()
         WHERE $6 OR g.fingerprint <> EXCLUDED.fingerprint OR g.renewed_at < now() - make_interval(secs => $7)
       RETURNING holder`,
      [environment, pipeline, kind, fingerprint, holder, force, staleSeconds],
    )) as unknown[];
    return rows.length === 1;
  }

  /** Keeps `holder`'s mark fresh; false once it was overtaken or removed. */
  async renewGeneration(
    environment: string,
    pipeline: string,
    kind: CodegenKind,
    holder: string,
  ): Promise<boolean> {
    const [, count] = (await this.ds.query(
      `UPDATE tapyard.codegen_generations SET renewed_at = now()
       WHERE environment = $1 AND pipeline = $2 AND kind = $3 AND holder = $4`,
      [environment, pipeline, kind, holder],
    )) as [unknown, number];
    return count === 1;
  }

  async unmarkGeneration(
    environment: string,
    pipeline: string,
    kind: CodegenKind,
    holder: string,
  ): Promise<void> {
    await this.ds.query(
      `DELETE FROM tapyard.codegen_generations
       WHERE environment = $1 AND pipeline = $2 AND kind = $3 AND holder = $4`,
      [environment, pipeline, kind, holder],
    );
  }

  /** Whether a model call is writing this script for `fingerprint` (a mark renewed within `staleSeconds`). */
  async generating(
    environment: string,
    pipeline: string,
    kind: CodegenKind,
    fingerprint: string,
    staleSeconds: number,
  ): Promise<boolean> {
    const rows = (await this.ds.query(
      `SELECT 1 FROM tapyard.codegen_generations
       WHERE environment = $1 AND pipeline = $2 AND kind = $3 AND fingerprint = $4
         AND renewed_at >= now() - make_interval(secs => $5)`,
      [environment, pipeline, kind, fingerprint, staleSeconds],
    )) as unknown[];
    return rows.length > 0;
  }

  private async lock(
    m: EntityManager,
    environment: string,
    pipeline: string,
    kind: CodegenKind,
  ): Promise<void> {
    await m.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [
      `codegen:${environment}:${pipeline}:${kind}`,
    ]);
  }
}

async function insertVersion(
  m: EntityManager,
  environment: string,
  pipeline: string,
  kind: CodegenKind,
  v: ScriptVersion,
): Promise<void> {
  await m.query(
    `INSERT INTO tapyard.codegen_script_versions (environment, pipeline, kind, version, origin, model,
       generated_at, fingerprint, contract_version, output_columns, script, commit_sha)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11, $12)`,
    [
      environment,
      pipeline,
      kind,
      v.version,
      v.origin,
      v.model,
      v.generatedAt,
      v.fingerprint,
      v.contractVersion,
      JSON.stringify(v.outputColumns),
      v.script,
      v.commitSha,
    ],
  );
}
