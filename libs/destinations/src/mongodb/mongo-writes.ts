import { createHash } from 'node:crypto';
import type { mongo } from 'mongoose';
import { ServiceUnavailableError, errorMessage } from '@tapyard/core';
import { DestinationErrorCode } from '../destination-errors';
import { Doc } from './mongo-documents';
import { mongoDriver } from './mongo-driver';

export const DUPLICATE_KEY = 11000;
const NAMESPACE_NOT_FOUND = 26;
const NOT_IMPLEMENTED = 238;

/**
 * Where a `replace` job writes before its documents become the collection: named after the job, so
 * a redelivery finds what an earlier delivery wrote there (ids are deterministic) and completes it.
 */
export const replaceStaging = (table: string, token: string): string =>
  `${table}__tapyard_replace_${createHash('sha256').update(token).digest('hex').slice(0, 16)}`;

/**
 * Inserts a batch, unordered. A duplicate `_id` means an earlier delivery of this job already wrote
 * that very document (ids are deterministic), so it counts as loaded. Inserts rather than upserts:
 * FerretDB v1 makes a replace-upsert scan the collection, which turns a large retry quadratic.
 * Returns the positions the server refused for another reason, with its message.
 */
export async function insertDocs(
  collection: mongo.Collection<Doc>,
  docs: Doc[],
): Promise<Map<number, string>> {
  try {
    await collection.insertMany(docs, { ordered: false });
    return new Map();
  } catch (err) {
    if (err instanceof mongoDriver().MongoBulkWriteError) {
      const errors = Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors];
      if (errors.length > 0) {
        return new Map(
          errors
            .filter((e) => e.code !== DUPLICATE_KEY)
            .map((e) => [e.index, e.errmsg ?? 'rejected by the server']),
        );
      }
    }
    throw unavailable(err);
  }
}

/**
 * Upserts a batch on the key, in order (a later document of a key replaces an earlier one). The
 * server stops an ordered batch at its first refused document: the rest is sent again after it.
 * Returns the positions refused, with the server's message.
 */
export async function upsertDocs(
  collection: mongo.Collection<Doc>,
  docs: Doc[],
  key: string[],
): Promise<Map<number, string>> {
  const bad = new Map<number, string>();
  let from = 0;
  while (from < docs.length) {
    const ops = docs.slice(from).map(({ _id: _unused, ...doc }) => ({
      replaceOne: {
        filter: Object.fromEntries(key.map((k) => [k, doc[k] ?? null])),
        replacement: doc as Doc,
        upsert: true,
      },
    }));
    try {
      await collection.bulkWrite(ops, { ordered: true });
      break;
    } catch (err) {
      const first =
        err instanceof mongoDriver().MongoBulkWriteError ? [err.writeErrors].flat()[0] : undefined;
      if (first === undefined) throw unavailable(err);
      bad.set(from + first.index, first.errmsg ?? 'rejected by the server');
      from += first.index + 1;
    }
  }
  return bad;
}

/**
 * Makes the staging collection the collection. When the server cannot drop the target in the rename
 * (FerretDB), it is dropped first; a redelivery after a crash in between renames the complete staging
 * collection then.
 */
export async function swapIn(admin: mongo.Db, db: mongo.Db, staging: string, table: string): Promise<void> {
  const rename = (dropTarget: boolean) =>
    admin.command({
      renameCollection: `${db.databaseName}.${staging}`,
      to: `${db.databaseName}.${table}`,
      dropTarget,
    });
  try {
    await rename(true);
    return;
  } catch (err) {
    if (
      !(err instanceof mongoDriver().MongoServerError) ||
      (err.code !== NOT_IMPLEMENTED && !/dropTarget/.test(err.message))
    )
      throw unavailable(err);
  }
  await db
    .collection(table)
    .drop()
    .catch((err: unknown) => {
      if (!(err instanceof mongoDriver().MongoServerError && err.code === NAMESPACE_NOT_FOUND))
        throw unavailable(err);
    });
  await mongoCall(() => rename(false));
}

/** Runs a driver call; a lost connection becomes a ServiceUnavailableError, which the runner retries. */
export async function mongoCall<T>(op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (err) {
    throw unavailable(err);
  }
}

export function unavailable(err: unknown): Error {
  if (err instanceof ServiceUnavailableError) return err;
  // A batch the connection broke under arrives as a MongoBulkWriteError (without write errors)
  // around the driver's network error.
  const cause: unknown = err instanceof mongoDriver().MongoBulkWriteError ? err.errorResponse : err;
  if (
    cause instanceof mongoDriver().MongoNetworkError ||
    cause instanceof mongoDriver().MongoServerSelectionError
  ) {
    return new ServiceUnavailableError('mongodb', `mongodb became unreachable: ${errorMessage(err)}`).coded(
      DestinationErrorCode.Unavailable,
    );
  }
  return new Error(`mongodb: ${errorMessage(err)}`);
}
