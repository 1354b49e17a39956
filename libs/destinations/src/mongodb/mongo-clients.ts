import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import type { mongo } from 'mongoose';
import { CONFIG, ServiceUnavailableError, TapyardConfig, errorMessage } from '@tapyard/core';
import { DestinationErrorCode } from '../destination-errors';
import { loadMongo } from './mongo-driver';

/**
 * The MongoDB-wire connection (MongoDB, or FerretDB in development), through the driver mongoose
 * ships. Documents are loaded as they come (not normalised), so there are no mongoose models.
 * Only the command subset FerretDB v1 implements is used: bulk upserts, find, listDatabases,
 * listCollections, drop.
 */
@Injectable()
export class MongoClients implements OnModuleDestroy {
  private client: Promise<mongo.MongoClient> | null = null;
  private decimals: Promise<boolean> | null = null;

  constructor(@Inject(CONFIG) private readonly config: TapyardConfig) {}

  get configured(): boolean {
    return this.config.mongodb.uri !== null;
  }

  async get(): Promise<mongo.MongoClient> {
    const uri = this.config.mongodb.uri;
    if (uri === null)
      throw new ServiceUnavailableError('mongodb', 'MongoDB is not configured (MONGODB_URI)').coded(
        DestinationErrorCode.Unavailable,
      );
    const timeoutMs = this.config.mongodb.timeoutMs;
    this.client ??= loadMongo()
      .then((driver) =>
        new driver.MongoClient(uri, {
          serverSelectionTimeoutMS: timeoutMs,
          connectTimeoutMS: timeoutMs,
        }).connect(),
      )
      .catch((err: unknown) => {
        this.client = null;
        throw new ServiceUnavailableError('mongodb', `mongodb is unreachable: ${errorMessage(err)}`).coded(
          DestinationErrorCode.Unavailable,
        );
      });
    return this.client;
  }

  /**
   * Whether the server stores BSON Decimal128. FerretDB v1 does not: a document holding one makes
   * it drop the connection ("v has zero value" in its log), so decimals go there as exact text.
   */
  async decimal128(): Promise<boolean> {
    this.decimals ??= this.get()
      .then((c) => c.db('admin').command({ buildInfo: 1 }))
      .then((info) => info.ferretdbVersion === undefined)
      .catch((err: unknown) => {
        this.decimals = null;
        throw err instanceof ServiceUnavailableError
          ? err
          : new ServiceUnavailableError(
              'mongodb',
              `mongodb did not answer buildInfo: ${errorMessage(err)}`,
            ).coded(DestinationErrorCode.Unavailable);
      });
    return this.decimals;
  }

  async onModuleDestroy(): Promise<void> {
    const c = await this.client?.catch(() => null);
    await c?.close();
  }
}
