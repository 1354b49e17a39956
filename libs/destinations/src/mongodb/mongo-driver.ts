import type { mongo } from 'mongoose';

export type MongoDriver = typeof mongo;

let driver: MongoDriver | null = null;

/**
 * The MongoDB driver mongoose ships, loaded on first use: mongoose is some 400 module files that an
 * API or worker which never talks to MongoDB should not load (start-up time and memory).
 */
export async function loadMongo(): Promise<MongoDriver> {
  driver ??= (await import('mongoose')).mongo;
  return driver;
}

/**
 * The driver for code that runs only once a client exists (its classes for `instanceof`, BSON types):
 * a client is made by loadMongo()'s result, so reaching here without it is a programming error.
 */
export function mongoDriver(): MongoDriver {
  if (!driver) throw new Error('the MongoDB driver is used before any client was made');
  return driver;
}
