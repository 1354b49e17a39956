import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { VectorStoreName } from '@tapyard/model';
import type { VectorStore } from './vector-store';
import { VectorModelMismatch } from './vector-store.errors';

/** The model whose vectors a container holds. */
export interface ContainerModel {
  model: string;
  dimension: number;
}

/**
 * `tapyard.vector_containers`: which embedding model filled each container. Vectors of two models are
 * not comparable even when their dimensions match, so a container keeps one model: loading or
 * searching it with another is refused (VectorModelMismatch) rather than silently re-embedded.
 */
@Injectable()
export class VectorContainers {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async get(environment: string, store: VectorStoreName, container: string): Promise<ContainerModel | null> {
    const rows: ContainerModel[] = await this.db.query(
      `SELECT model, dimension FROM tapyard.vector_containers WHERE environment = $1 AND store = $2 AND container = $3`,
      [environment, store, container],
    );
    return rows[0] ?? null;
  }

  /**
   * Makes `container` ready for vectors of `want`: creates it when missing (then it belongs to this
   * model), adopts one made elsewhere whose dimension matches, and refuses one filled by another
   * model. `created` says whether this call created it; one it creates carries `mark` (VectorStore.ensure).
   */
  async prepare(
    environment: string,
    store: VectorStore,
    container: string,
    want: ContainerModel,
    mark?: string,
  ): Promise<{ created: boolean }> {
    const known = await this.get(environment, store.name, container);
    const exists = (await store.dimension(container)) !== null;
    if (known && exists && known.model !== want.model) {
      throw new VectorModelMismatch(store.name, container, known.model, want.model);
    }
    const result = await store.ensure(container, want.dimension, mark);
    if (!known || !exists || result.created) await this.remember(environment, store.name, container, want);
    return result;
  }

  /** Refuses a query embedded by another model than the one that filled the container. */
  async checkQuery(
    environment: string,
    store: VectorStore,
    container: string,
    want: ContainerModel,
  ): Promise<void> {
    const known = await this.get(environment, store.name, container);
    if (known && known.model !== want.model)
      throw new VectorModelMismatch(store.name, container, known.model, want.model);
  }

  async forget(environment: string, store: VectorStoreName, container: string): Promise<void> {
    await this.db.query(
      `DELETE FROM tapyard.vector_containers WHERE environment = $1 AND store = $2 AND container = $3`,
      [environment, store, container],
    );
  }

  private async remember(
    environment: string,
    store: VectorStoreName,
    container: string,
    m: ContainerModel,
  ): Promise<void> {
    await this.db.query(
      `INSERT INTO tapyard.vector_containers (environment, store, container, model, dimension) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (environment, store, container) DO UPDATE SET model = EXCLUDED.model, dimension = EXCLUDED.dimension, created_at = now()`,
      [environment, store, container, m.model, m.dimension],
    );
  }
}
