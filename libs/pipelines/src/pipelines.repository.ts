import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { PipelineDefinition } from './pipeline.types';

export interface PipelineRow {
  name: string;
  catalog: string | null;
  definition: PipelineDefinition;
  version: number;
  updated_at: Date;
}

@Injectable()
export class PipelinesRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  transaction<T>(work: (m: EntityManager) => Promise<T>): Promise<T> {
    return this.db.transaction(work);
  }

  async find(
    environment: string,
    name: string,
    m: EntityManager = this.db.manager,
    lock = false,
  ): Promise<PipelineRow | null> {
    const rows: PipelineRow[] = await m.query(
      `SELECT name, catalog, definition, version, updated_at FROM tapyard.pipelines
       WHERE environment = $1 AND name = $2 ${lock ? 'FOR UPDATE' : ''}`,
      [environment, name],
    );
    return rows[0] ?? null;
  }

  list(environment: string): Promise<PipelineRow[]> {
    return this.db.query(
      `SELECT name, catalog, definition, version, updated_at FROM tapyard.pipelines WHERE environment = $1 ORDER BY name`,
      [environment],
    );
  }

  /** Inserts version 1, or does nothing when the row exists (returns whether it inserted). */
  async insert(environment: string, def: PipelineDefinition, m: EntityManager): Promise<boolean> {
    const rows: unknown[] = await m.query(
      `INSERT INTO tapyard.pipelines (environment, name, catalog, definition, version)
       VALUES ($1, $2, $3, $4, 1) ON CONFLICT (environment, name) DO NOTHING RETURNING id`,
      [environment, def.name, def.catalog, JSON.stringify(def)],
    );
    return rows.length > 0;
  }

  async update(
    environment: string,
    def: PipelineDefinition,
    version: number,
    m: EntityManager,
  ): Promise<void> {
    await m.query(
      `UPDATE tapyard.pipelines SET definition = $3, catalog = $4, version = $5, updated_at = now()
       WHERE environment = $1 AND name = $2`,
      [environment, def.name, JSON.stringify(def), def.catalog, version],
    );
  }

  async delete(environment: string, name: string): Promise<boolean> {
    const res: [unknown[], number] = await this.db.query(
      `DELETE FROM tapyard.pipelines WHERE environment = $1 AND name = $2`,
      [environment, name],
    );
    return res[1] > 0;
  }
}
