import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { DataSource, QueryRunner } from 'typeorm';
import { DataLocation, PipelineDeletingError, PipelineNotFoundError } from '@tapyard/pipelines';
import { VectorStoreName } from '@tapyard/model';

/**
 * A table, collection, job folder or vector-store container a pipeline created, as recorded when it
 * created it. `marked`: the object carries its creation id in the store itself (a container made with
 * VectorStore.ensure's mark), so the record holds only while the object still carries it.
 */
export type CreatedObject = DataLocation & {
  creationId: string;
  environment: string;
  pipeline: string;
  marked: boolean;
};

/** Records one object as created by the claiming pipeline; returns its creation id. */
export type RecordCreation = (
  location: DataLocation,
  creationId?: string,
  options?: { marked?: boolean },
) => Promise<string>;

interface Row {
  creation_id: string;
  environment: string;
  pipeline: string;
  store: DataLocation['store'];
  database: string | null;
  container: string;
  name: string;
  marked: boolean;
}

/**
 * `tapyard.created_objects`: what each pipeline created at its destination, the only things
 * `DELETE /pipeline?deleteData=true` drops. Rows belong to the pipeline row (ON DELETE CASCADE).
 */
@Injectable()
export class CreatedObjects {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Runs `work` while holding the pipeline row FOR KEY SHARE, in a transaction that also holds the
   * records `work` makes: they commit when `work` returns and vanish when it throws. A pipeline being
   * deleted (or gone) refuses the claim, and the delete's FOR UPDATE waits for running claims, so a
   * delete never misses an object created while it runs. `serialize`: claims naming the same key (of
   * any pipeline or environment) run one at a time, so one sees what another created and recorded.
   */
  async claim<T>(
    environment: string,
    pipeline: string,
    work: (record: RecordCreation) => Promise<T>,
    serialize?: string,
  ): Promise<T> {
    const runner = this.db.createQueryRunner();
    await runner.connect();
    try {
      await runner.startTransaction();
      const id = await lockPipeline(runner, environment, pipeline);
      if (serialize !== undefined) {
        await runner.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [serialize]);
      }
      const record: RecordCreation = async (location, creationId = randomUUID(), options = {}) => {
        const { database, container, name } = columnsOf(location);
        await runner.query(
          `INSERT INTO tapyard.created_objects
             (creation_id, pipeline_id, environment, pipeline, store, database, container, name, marked)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
           ON CONFLICT (creation_id) DO UPDATE SET marked = created_objects.marked OR EXCLUDED.marked`,
          [
            creationId,
            id,
            environment,
            pipeline,
            location.store,
            database,
            container,
            name,
            options.marked === true,
          ],
        );
        return creationId;
      };
      const result = await work(record);
      await runner.commitTransaction();
      return result;
    } catch (err) {
      if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
      throw err;
    } finally {
      await runner.release();
    }
  }

  async list(environment: string, pipeline: string): Promise<CreatedObject[]> {
    const rows: Row[] = await this.db.query(
      `SELECT creation_id, environment, pipeline, store, database, container, name, marked
         FROM tapyard.created_objects WHERE environment = $1 AND pipeline = $2 ORDER BY created_at, creation_id`,
      [environment, pipeline],
    );
    return rows.map(fromRow);
  }

  /**
   * The creation ids recorded for `location` by a pipeline of `environment` that still answers for it:
   * `loading` itself, or a creator that still loads where `loading` does (their recorded places meet:
   * a rejects table or a container is its pipeline's place too; when either's places are not recorded
   * for its version, it is taken as answering). A creator since pointed elsewhere leaves the object
   * unclaimed, so another pipeline adopting it needs an admin's save like any place no pipeline
   * created. The object's own mark tells whether it is still the one created.
   */
  async creationsAt(
    environment: string,
    location: DataLocation,
    loading: string,
  ): Promise<{ creationId: string; pipeline: string; marked: boolean }[]> {
    const { database, container, name } = columnsOf(location);
    const rows: { creation_id: string; pipeline: string; marked: boolean }[] = await this.db.query(
      `SELECT o.creation_id, o.pipeline, o.marked FROM tapyard.created_objects o
         JOIN tapyard.pipelines p ON p.id = o.pipeline_id
         LEFT JOIN tapyard.pipelines me ON me.environment = $1 AND me.name = $6
        WHERE o.environment = $1 AND o.store = $2 AND o.name = $3 AND o.container = $4
          AND o.database IS NOT DISTINCT FROM $5
          AND (p.name = $6 OR me.id IS NULL OR p.locations_stale OR me.locations_stale
               OR p.locations && me.locations)`,
      [environment, location.store, name, container, database, loading],
    );
    return rows.map((r) => ({ creationId: r.creation_id, pipeline: r.pipeline, marked: r.marked }));
  }

  /** Forgets objects once dropped (or found gone, or no longer this pipeline's). */
  async forget(creationIds: string[]): Promise<void> {
    if (creationIds.length === 0) return;
    await this.db.query(`DELETE FROM tapyard.created_objects WHERE creation_id = ANY($1)`, [creationIds]);
  }
}

async function lockPipeline(runner: QueryRunner, environment: string, pipeline: string): Promise<string> {
  const rows: { id: string; deleting: boolean }[] = await runner.query(
    `SELECT id, deleting_since IS NOT NULL AS deleting FROM tapyard.pipelines
      WHERE environment = $1 AND name = $2 FOR KEY SHARE`,
    [environment, pipeline],
  );
  if (rows.length === 0) throw new PipelineNotFoundError(pipeline);
  if (rows[0].deleting) throw new PipelineDeletingError(pipeline);
  return rows[0].id;
}

function columnsOf(l: DataLocation): { database: string | null; container: string; name: string } {
  switch (l.store) {
    case 'postgres':
      return { database: l.database, container: l.schema, name: l.name };
    case 'mongodb':
      return { database: l.database, container: '', name: l.name };
    case 'objectstore':
      return { database: null, container: l.bucket, name: l.prefix };
    case 'vectorstore':
      return { database: l.vectorStore, container: '', name: l.container };
  }
}

function fromRow(r: Row): CreatedObject {
  const owner = {
    creationId: r.creation_id,
    environment: r.environment,
    pipeline: r.pipeline,
    marked: r.marked,
  };
  switch (r.store) {
    case 'postgres':
      return { ...owner, store: 'postgres', database: r.database ?? '', schema: r.container, name: r.name };
    case 'mongodb':
      return { ...owner, store: 'mongodb', database: r.database ?? '', name: r.name };
    case 'objectstore':
      return { ...owner, store: 'objectstore', bucket: r.container, prefix: r.name };
    case 'vectorstore':
      return {
        ...owner,
        store: 'vectorstore',
        vectorStore: r.database as VectorStoreName,
        container: r.name,
      };
  }
}
