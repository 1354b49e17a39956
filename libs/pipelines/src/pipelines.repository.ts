import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { PipelineDefinition } from '@tapyard/model';

export interface PipelineRow {
  id: string;
  name: string;
  catalog: string | null;
  definition: PipelineDefinition;
  version: number;
  updated_at: Date;
  deleting_since: Date | null;
  load_id: boolean;
  locations_checked: boolean;
  may_adopt: boolean;
}

/** PostgreSQL's lock_not_available: a lock_timeout ran out. */
export const LOCK_NOT_AVAILABLE = '55P03';

@Injectable()
export class PipelinesRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  transaction<T>(work: (m: EntityManager) => Promise<T>): Promise<T> {
    return this.db.transaction(work);
  }

  /**
   * `lock`: FOR NO KEY UPDATE, which serialises changes of the row but, unlike FOR UPDATE, does not
   * wait for loads that hold it FOR KEY SHARE while they create destination objects (see markDeleting).
   */
  async find(
    environment: string,
    name: string,
    m: EntityManager = this.db.manager,
    lock = false,
  ): Promise<PipelineRow | null> {
    const rows: PipelineRow[] = await m.query(
      `SELECT id, name, catalog, definition, version, updated_at, deleting_since, load_id, locations_checked, may_adopt
       FROM tapyard.pipelines
       WHERE environment = $1 AND name = $2 ${lock ? 'FOR NO KEY UPDATE' : ''}`,
      [environment, name],
    );
    return rows[0] ?? null;
  }

  list(environment: string, m: EntityManager = this.db.manager): Promise<PipelineRow[]> {
    return m.query(
      `SELECT id, name, catalog, definition, version, updated_at, deleting_since, load_id, locations_checked, may_adopt
       FROM tapyard.pipelines
       WHERE environment = $1 ORDER BY name`,
      [environment],
    );
  }

  /**
   * Until the transaction ends, no other save of the environment runs: a save reads where the other
   * pipelines load, and two saves naming one table at once would each miss the other.
   */
  async lockSaves(environment: string, m: EntityManager): Promise<void> {
    await m.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`tapyard-pipeline-saves:${environment}`]);
  }

  /**
   * Inserts version 1, or does nothing when the row exists (returns whether it inserted). A pipeline
   * created now loads rows carrying their load id, and was saved with its locations checked.
   * `locations`: where it loads, as saves describe the places (see sharers). `mayAdopt`: its saver
   * held unscoped pipeline:update, so it may load into a place that exists and no pipeline created.
   */
  async insert(
    environment: string,
    def: PipelineDefinition,
    locations: string[],
    mayAdopt: boolean,
    m: EntityManager,
  ): Promise<boolean> {
    const rows: unknown[] = await m.query(
      `INSERT INTO tapyard.pipelines
         (environment, name, catalog, definition, version, load_id, locations_checked, locations, locations_version,
          may_adopt)
       VALUES ($1, $2, $3, $4, 1, true, true, $5, 1, $6) ON CONFLICT (environment, name) DO NOTHING RETURNING id`,
      [environment, def.name, def.catalog, JSON.stringify(def), locations, mayAdopt],
    );
    return rows.length > 0;
  }

  /**
   * `saved`: the change is a save, which checked who else loads where the pipeline loads, and whose
   * saver's access sets `may_adopt` (see insert); a change made by a job (new columns, null) leaves
   * both marks as they were.
   */
  async update(
    environment: string,
    def: PipelineDefinition,
    version: number,
    locations: string[],
    m: EntityManager,
    saved: { mayAdopt: boolean } | null,
  ): Promise<void> {
    await m.query(
      `UPDATE tapyard.pipelines SET definition = $3, catalog = $4, version = $5, updated_at = now(),
         locations_checked = locations_checked OR $6, locations = $7, locations_version = $5,
         may_adopt = coalesce($8, may_adopt)
       WHERE environment = $1 AND name = $2`,
      [
        environment,
        def.name,
        JSON.stringify(def),
        def.catalog,
        version,
        saved !== null,
        locations,
        saved?.mayAdopt ?? null,
      ],
    );
  }

  /**
   * The other pipelines of the environment that may load into one of `locations`: those whose
   * recorded places include one (an index lookup), and those whose places are not known for their
   * version (stored before places were recorded, or changed since by a process that does not record
   * them), which the caller reads whole and records with `recordLocations`.
   */
  sharers(
    environment: string,
    name: string,
    locations: string[],
    m: EntityManager = this.db.manager,
  ): Promise<(PipelineRow & { stale: boolean })[]> {
    return m.query(
      `SELECT id, name, catalog, definition, version, updated_at, deleting_since, load_id, locations_checked, may_adopt,
              locations_stale AS stale
       FROM tapyard.pipelines
       WHERE environment = $1 AND name <> $2
         AND (locations && $3::text[] OR locations_stale)`,
      [environment, name, locations],
    );
  }

  /** Records a pipeline's places as read from `version` (nothing when it has changed since). */
  async recordLocations(
    environment: string,
    name: string,
    version: number,
    locations: string[],
    m: EntityManager = this.db.manager,
  ): Promise<void> {
    await m.query(
      `UPDATE tapyard.pipelines SET locations = $4, locations_version = $3
       WHERE environment = $1 AND name = $2 AND version = $3`,
      [environment, name, version, locations],
    );
  }

  /**
   * A save that changed nothing still checked the locations: a stored definition is cleared to load,
   * and one saved unchanged by a caller who may adopt (see insert) may adopt from then on (a scoped
   * saver leaves an admin's approval of the same definition as it was).
   */
  async markSaved(environment: string, name: string, mayAdopt: boolean, m: EntityManager): Promise<void> {
    await m.query(
      `UPDATE tapyard.pipelines SET locations_checked = true, may_adopt = may_adopt OR $3
       WHERE environment = $1 AND name = $2`,
      [environment, name, mayAdopt],
    );
  }

  /**
   * Marks the pipeline as being deleted (kept when already set). FOR UPDATE waits for the loads that
   * hold the row FOR KEY SHARE while they create tables, collections or files, so once this returns
   * every such creation is committed and recorded, and no new one can start. Throws the driver's
   * lock_not_available error after `lockTimeoutMs`. Returns false when there is no such pipeline.
   */
  async markDeleting(environment: string, name: string, lockTimeoutMs: number): Promise<boolean> {
    return this.db.transaction(async (m) => {
      await m.query(`SELECT set_config('lock_timeout', $1, true)`, [`${lockTimeoutMs}ms`]);
      const rows: unknown[] = await m.query(
        `SELECT id FROM tapyard.pipelines WHERE environment = $1 AND name = $2 FOR UPDATE`,
        [environment, name],
      );
      if (rows.length === 0) return false;
      await m.query(
        `UPDATE tapyard.pipelines SET deleting_since = coalesce(deleting_since, now())
         WHERE environment = $1 AND name = $2`,
        [environment, name],
      );
      return true;
    });
  }

  /** Deletes the row (its created-object records go with it, ON DELETE CASCADE). */
  async delete(environment: string, name: string, lockTimeoutMs: number): Promise<boolean> {
    return this.db.transaction(async (m) => {
      await m.query(`SELECT set_config('lock_timeout', $1, true)`, [`${lockTimeoutMs}ms`]);
      const res: [unknown[], number] = await m.query(
        `DELETE FROM tapyard.pipelines WHERE environment = $1 AND name = $2`,
        [environment, name],
      );
      return res[1] > 0;
    });
  }
}
