import { Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import type { mongo } from 'mongoose';
import { ServiceUnavailableError, ValidationError, errorMessage } from '@tapyard/core';
import {
  safeText,
  DatabaseDestination,
  LOAD_ID_COLUMN,
  PipelineDefinition,
  TypedBatch,
  rowText,
} from '@tapyard/model';
import { REJECTS_SUFFIX, describeLocation, locationUnclaimedError } from '@tapyard/pipelines';
import {
  Destination,
  DropOutcome,
  LoadResult,
  LoadTarget,
  Payload,
  RejectedRow,
  databaseOf,
  primaryKeyOf,
  writeModeOf,
} from '../destination';
import { CreatedObject, CreatedObjects } from '../ownership/created-objects';
import { MongoClients } from './mongo-clients';
import { DestinationErrorCode } from '../destination-errors';
import { Doc, documentBuilder, typedBatch } from './mongo-documents';
import {
  DUPLICATE_KEY,
  insertDocs,
  mongoCall,
  replaceStaging,
  swapIn,
  unavailable,
  upsertDocs,
} from './mongo-writes';
import { mongoDriver } from './mongo-driver';

/** Collection (in the target database) recording committed loads, keyed by pipeline token. */
export const LOADS_COLLECTION = '_tapyard_loads';
const BATCH = 1000;
const NAMESPACE_EXISTS = 48;

/** The unique index a merge upserts through, named after its key. */
const keyIndexName = (key: string[]): string =>
  `tapyard_key_${createHash('sha256').update(JSON.stringify(key)).digest('hex').slice(0, 16)}`;

type CollectionLocation = Extract<CreatedObject, { store: 'mongodb' }>;
type MongoLocation = Omit<CollectionLocation, 'creationId' | 'environment' | 'pipeline' | 'marked'>;

/**
 * Marker in the database's ledger collection naming the creation that made a collection: a delete
 * drops a collection only while its marker is the one the record predicts.
 */
interface CreationMarker {
  _id: string;
  creationId: string;
  environment: string;
  pipeline: string;
  at: Date;
}
const markerId = (collection: string): string => `created:${collection}`;
interface LedgerEntry {
  _id: string;
  loaded: number;
  rejected: number;
  collection: string;
  at: Date;
}

/**
 * Loads records into the collection `destination.database.table` of database `dbName`, as they
 * are: a `_json` / `_xml` pipeline stores each record's object, other pipelines one field per
 * column with its type. Exactly-once effect without transactions (FerretDB has none): every
 * record's `_id` is `<pipelineToken>:<n>`, so a redelivered job finds the documents an earlier
 * delivery wrote (duplicate key) instead of adding copies; a ledger entry written after the last batch makes a
 * later redelivery write nothing. Rejected records go to `<collection>_rejects`.
 *
 * Write modes keep that: `replace` fills a staging collection named after the job, then renames it
 * over the collection (atomic with MongoDB's dropTarget; FerretDB lacks it, so there the collection is
 * dropped, then the staging one renamed: a reader in between finds it absent, never half filled);
 * `merge` upserts each document on the key in file order, which a redelivery repeats to the same end.
 */
@Injectable()
export class MongoDbDestination implements Destination {
  readonly name = 'mongodb';
  readonly processName = 'MongoDBLoader' as const;
  readonly capabilities = {
    exactlyOnce: true,
    schemaEvolution: true,
    maxBatchRows: null,
    csvPassThrough: false,
    retractable: true,
  };
  readonly encoder = 'typed';

  constructor(
    private readonly clients: MongoClients,
    private readonly ownership: CreatedObjects,
  ) {}

  selects(destination: PipelineDefinition['destination']): boolean {
    return destination.database?.usePostgres === false;
  }

  describe(destination: PipelineDefinition['destination']): string {
    const { dbName, table } = databaseOf(destination);
    return `${dbName}.${table}`;
  }

  async probe(): Promise<void> {
    await mongoCall(async () => (await this.clients.get()).db('admin').command({ ping: 1 }));
  }

  async committed(target: LoadTarget): Promise<LoadResult | null> {
    const { dbName, table } = databaseOf(target.destination);
    const db = await this.db(dbName);
    const done = await mongoCall(() =>
      db.collection<LedgerEntry>(LOADS_COLLECTION).findOne({ _id: target.pipelineToken }),
    );
    return done
      ? { loaded: done.loaded, rejected: done.rejected, alreadyLoaded: true, location: `${dbName}.${table}` }
      : null;
  }

  locations(destination: PipelineDefinition['destination']): MongoLocation[] {
    const { dbName, table } = databaseOf(destination);
    return [table, `${table}${REJECTS_SUFFIX}`].map((name) => ({ store: 'mongodb', database: dbName, name }));
  }

  /**
   * Creates the collection and its rejects collection when missing, recording them as this
   * pipeline's: createCollection fails when the name exists, so "created" is never a guess, even
   * against another pipeline creating the same collection at the same moment.
   */
  async prepare(target: LoadTarget): Promise<void> {
    validateNames(databaseOf(target.destination));
    const db = await this.db(databaseOf(target.destination).dbName);
    const wanted = this.locations(target.destination);
    const present = new Set(
      (
        await mongoCall(() =>
          db.listCollections({ name: { $in: wanted.map((l) => l.name) } }, { nameOnly: true }).toArray(),
        )
      ).map((c) => c.name),
    );
    if (target.mayAdopt === false) {
      await this.assertClaimed(
        db,
        target,
        wanted.filter((l) => present.has(l.name)),
      );
    }
    const missing = wanted.filter((l) => !present.has(l.name));
    if (missing.length > 0) await this.create(db, target, missing);
    if (writeModeOf(target) === 'merge') await this.keyIndex(db, target);
  }

  /**
   * For a pipeline that may not adopt (LoadTarget.mayAdopt false): each existing collection must be one
   * a pipeline of its environment created, as recorded and as its creation marker still says, or the
   * load is refused naming it before anything is written.
   */
  private async assertClaimed(db: mongo.Db, target: LoadTarget, existing: MongoLocation[]): Promise<void> {
    for (const l of existing) {
      const creations = await this.ownership.creationsAt(target.environment, l, target.pipeline);
      const marker =
        creations.length === 0
          ? null
          : await mongoCall(() =>
              db.collection<CreationMarker>(LOADS_COLLECTION).findOne({ _id: markerId(l.name) }),
            );
      const claimed = creations.some(
        (c) =>
          marker?.creationId === c.creationId &&
          marker.environment === target.environment &&
          marker.pipeline === c.pipeline,
      );
      if (!claimed) throw locationUnclaimedError(target.pipeline, describeLocation(l));
    }
  }

  /** A unique index on the merge key; documents already repeating the key make merging impossible. */
  private async keyIndex(db: mongo.Db, target: LoadTarget): Promise<void> {
    const key = primaryKeyOf(target);
    const { table } = databaseOf(target.destination);
    await db
      .collection(table)
      .createIndex(Object.fromEntries(key.map((k) => [k, 1])), { unique: true, name: keyIndexName(key) })
      .catch((err: unknown) => {
        if (err instanceof mongoDriver().MongoServerError && err.code === DUPLICATE_KEY) {
          throw new ValidationError(
            `cannot merge into ${describeLocation({ store: 'mongodb', database: db.databaseName, name: table })} ` +
              `on (${key.join(', ')}): documents already there repeat that key`,
          ).coded(DestinationErrorCode.LoadRefused);
        }
        throw unavailable(err);
      });
  }

  private async create(db: mongo.Db, target: LoadTarget, missing: MongoLocation[]): Promise<void> {
    await this.ownership.claim(target.environment, target.pipeline, async (record) => {
      for (const l of missing) {
        const created = await db.createCollection(l.name).then(
          () => true,
          (err: unknown) => {
            if (err instanceof mongoDriver().MongoServerError && err.code === NAMESPACE_EXISTS) return false;
            throw unavailable(err);
          },
        );
        if (!created) continue;
        const creationId = await record(l);
        await mongoCall(() =>
          db
            .collection<CreationMarker>(LOADS_COLLECTION)
            .replaceOne(
              { _id: markerId(l.name) },
              { creationId, environment: target.environment, pipeline: target.pipeline, at: new Date() },
              { upsert: true },
            ),
        );
      }
    });
  }

  async load(
    target: LoadTarget,
    payloads: AsyncIterable<Payload>,
    rejects: () => AsyncIterable<RejectedRow>,
    progress: (rowsSoFar: number) => void,
  ): Promise<LoadResult> {
    const { table } = databaseOf(target.destination);
    const db = await this.db(databaseOf(target.destination).dbName);
    const location = `${databaseOf(target.destination).dbName}.${table}`;
    const ledger = db.collection<LedgerEntry>(LOADS_COLLECTION);
    const done = await mongoCall(() => ledger.findOne({ _id: target.pipelineToken }));
    if (done) {
      for await (const _ of payloads); // drain the reader so its temporary files are closed
      return { loaded: done.loaded, rejected: done.rejected, alreadyLoaded: true, location };
    }
    const decimals = target.columns.some((c) => c.type === 'decimal') && (await this.clients.decimal128());
    const toDoc = documentBuilder(target.columns, decimals);
    const mode = writeModeOf(target);
    const staging = mode === 'replace' ? replaceStaging(table, target.pipelineToken) : null;
    const collection = db.collection<Doc>(staging ?? table);
    const key = mode === 'merge' ? primaryKeyOf(target) : null;
    // Rejected rows are written as they come, in batches with ids fixed by the job: a retry meets them.
    const rejectsOut = db.collection<Doc>(`${table}${REJECTS_SUFFIX}`);
    let rejected = 0;
    let refused: Doc[] = [];
    const reject = async (r: RejectedRow | null) => {
      if (r !== null) refused.push({ _id: `${target.pipelineToken}:r${rejected++}`, ...r });
      if (refused.length >= BATCH || (r === null && refused.length > 0)) {
        const batch = refused;
        refused = [];
        await insertDocs(rejectsOut, batch);
      }
    };
    let seq = 0;
    let loaded = 0;
    let pending: { doc: Doc; batch: TypedBatch; row: number }[] = [];
    const flush = async () => {
      if (pending.length === 0) return;
      const batch = pending;
      pending = [];
      const docs = batch.map((b) => b.doc);
      const bad = key ? await upsertDocs(collection, docs, key) : await insertDocs(collection, docs);
      for (const [i, reason] of bad) {
        await reject({
          line: batch[i].batch.lines[batch[i].row],
          stage: 'MongoDBLoader',
          reason: safeText(reason),
          raw: safeText(rowText(batch[i].batch, batch[i].row)),
        });
      }
      loaded += batch.length - bad.size;
      progress(loaded);
    };
    try {
      for await (const payload of payloads) {
        const batch = typedBatch(payload);
        for (let row = 0; row < batch.lines.length; row++) {
          const id = `${target.pipelineToken}:${seq++}`;
          const doc = toDoc(batch, row, id);
          if (typeof doc !== 'string' && target.loadId) doc[LOAD_ID_COLUMN] = target.pipelineToken;
          if (typeof doc === 'string')
            await reject({
              line: batch.lines[row],
              stage: 'MongoDBLoader',
              reason: doc,
              raw: safeText(rowText(batch, row)),
            });
          else pending.push({ doc, batch, row });
          if (pending.length >= BATCH) await flush();
        }
      }
      await flush();
    } catch (err) {
      // Without transactions, a job that fails (e.g. its file turns out malformed) takes back what it
      // wrote; an unreachable server is retried instead, and the retry meets its own ids.
      // A merge cannot take back its upserts: what it merged before the failure stays.
      if (!(err instanceof ServiceUnavailableError) && seq > 0) {
        if (staging) await collection.drop().catch(() => undefined);
        else if (!key) {
          await collection
            .deleteMany({ _id: { $gte: `${target.pipelineToken}:`, $lt: `${target.pipelineToken};` } })
            .catch(() => undefined);
        }
        await rejectsOut
          .deleteMany({ _id: { $gte: `${target.pipelineToken}:`, $lt: `${target.pipelineToken};` } })
          .catch(() => undefined);
      }
      throw err;
    }
    for await (const r of rejects()) await reject(r);
    await reject(null);
    // A job that loads no document (every one rejected) fails: it replaces nothing.
    if (staging && loaded > 0) await swapIn((await this.clients.get()).db('admin'), db, staging, table);
    else if (staging) await collection.drop().catch(() => undefined); // absent when nothing was inserted
    await mongoCall(() =>
      ledger.replaceOne(
        { _id: target.pipelineToken },
        { loaded, rejected, collection: table, at: new Date() },
        { upsert: true },
      ),
    );
    return { loaded, rejected, alreadyLoaded: false, location };
  }

  /** Deletes the documents the job loaded (by load id) and the ones it rejected. */
  async removeRows(target: LoadTarget): Promise<number> {
    const { dbName, table } = databaseOf(target.destination);
    const db = await this.db(dbName);
    const token = target.pipelineToken;
    const removed = await mongoCall(() => db.collection(table).deleteMany({ [LOAD_ID_COLUMN]: token }));
    await mongoCall(() =>
      db
        .collection<Doc>(`${table}${REJECTS_SUFFIX}`)
        .deleteMany({ _id: { $gte: `${token}:`, $lt: `${token};` } }),
    );
    return removed.deletedCount;
  }

  /**
   * Collection by collection (no transactions here): a failure stops the delete, which can be
   * repeated; collections dropped before it are then found gone.
   */
  async drop(objects: CreatedObject[]): Promise<DropOutcome[]> {
    const outcomes: DropOutcome[] = [];
    for (const o of objects) {
      if (o.store !== 'mongodb') continue;
      const db = await this.db(o.database);
      const markers = db.collection<CreationMarker>(LOADS_COLLECTION);
      const marker = await mongoCall(() => markers.findOne({ _id: markerId(o.name) }));
      const present =
        (await mongoCall(() => db.listCollections({ name: o.name }, { nameOnly: true }).toArray())).length >
        0;
      if (!present) {
        outcomes.push({ object: o, dropped: false, reason: 'no longer exists' });
      } else if (marker?.creationId !== o.creationId) {
        outcomes.push({
          object: o,
          dropped: false,
          reason: 'is no longer the collection this pipeline created (its creation marker differs)',
        });
        continue;
      } else {
        await mongoCall(() => db.collection(o.name).drop()).catch((err: unknown) => {
          if (err instanceof ServiceUnavailableError) throw err;
          throw new Error(`cannot drop ${describeLocation(o)}: ${errorMessage(err)}`, { cause: err });
        });
        outcomes.push({ object: o, dropped: true });
      }
      if (marker?.creationId === o.creationId) {
        await mongoCall(() => markers.deleteOne({ _id: markerId(o.name), creationId: o.creationId }));
      }
    }
    return outcomes;
  }

  private async db(database: string): Promise<mongo.Db> {
    return (await this.clients.get()).db(database);
  }
}

const NAME = /^[A-Za-z0-9_][A-Za-z0-9_-]{0,62}$/;

function validateNames(d: DatabaseDestination): void {
  if (!NAME.test(d.dbName))
    throw new ValidationError(`MongoDB database name '${d.dbName}' is invalid`).coded(
      DestinationErrorCode.InvalidName,
    );
  if (!/^[A-Za-z_][A-Za-z0-9_.-]{0,119}$/.test(d.table) || d.table.startsWith('system.')) {
    throw new ValidationError(`MongoDB collection name '${d.table}' is invalid`).coded(
      DestinationErrorCode.InvalidName,
    );
  }
}
