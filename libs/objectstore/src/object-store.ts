import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { Client } from 'minio';
import { createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Logger } from 'pino';
import {
  CONFIG,
  LOGGER,
  NotFoundError,
  ServiceUnavailableError,
  TapyardConfig,
  ValidationError,
  errorMessage,
} from '@tapyard/core';
import type { BodyMemory } from './http-get';
import { S3Requests } from './s3-requests';

/** What each environment keeps in the object store, one bucket per purpose. */
export const BUCKET_PURPOSES = ['raw', 'config', 'taps', 'staged', 'output', 'assistant'] as const;
export type BucketPurpose = (typeof BUCKET_PURPOSES)[number];

/**
 * `<env>-<purpose>`. Bucket names allow lowercase letters, digits, '-' and '.', so '_' in an
 * environment name becomes '-' (environments `a_b` and `a-b` would share buckets: avoid the pair).
 */
export function bucketName(environment: string, purpose: BucketPurpose): string {
  return `${environment.replace(/_/g, '-')}-${purpose}`;
}

export interface StoredObject {
  key: string;
  etag: string;
  size: number;
  lastModified: Date;
}

export class ObjectNotFoundError extends NotFoundError {
  constructor(bucket: string, key: string) {
    super(`object '${key}' does not exist in bucket '${bucket}'`);
  }
}

/** `s3://bucket/key`, the form `path` fields use. */
export function objectUri(bucket: string, key: string): string {
  return `s3://${bucket}/${key}`;
}

/**
 * S3-compatible object store (MinIO here; AWS S3, Ceph and others by configuration) behind our own
 * small interface, through the `minio` client. Buckets of an environment are created the first time
 * it is used (at boot for TAPYARD_ENV, on first use for tenants).
 */
@Injectable()
export class ObjectStore implements OnModuleInit {
  private readonly client: Client | null;
  private readonly direct: S3Requests | null = null;
  private readonly ready = new Map<string, Promise<void>>();

  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    const endpoint = config.objectStore.endpoint;
    if (endpoint === null) {
      this.client = null;
      return;
    }
    const u = new URL(endpoint);
    const useSSL = u.protocol === 'https:';
    this.client = new Client({
      endPoint: u.hostname,
      port: u.port ? Number(u.port) : useSSL ? 443 : 80,
      useSSL,
      accessKey: config.objectStore.accessKey,
      secretKey: config.objectStore.secretKey,
      region: config.objectStore.region,
    });
    this.direct = new S3Requests({ ...config.objectStore, endpoint });
  }

  get configured(): boolean {
    return this.client !== null;
  }

  /** Creates the environment's buckets at boot; an unreachable store is logged, not fatal. */
  async onModuleInit(): Promise<void> {
    if (!this.client) {
      this.logger.info(
        'object store not configured (OBJECT_STORE_ENDPOINT): uploads of archives and config files are off',
      );
      return;
    }
    await this.ensureBuckets(this.config.environment).catch((err: unknown) =>
      this.logger.warn(
        { err: errorMessage(err) },
        'object store unreachable at boot; buckets are created on first use',
      ),
    );
  }

  /** The bucket of an environment for a purpose, created when missing. */
  async bucket(environment: string, purpose: BucketPurpose): Promise<string> {
    await this.ensureBuckets(environment);
    return bucketName(environment, purpose);
  }

  /**
   * A failing body stream fails the put: the client pipes the body without an error handler, so a
   * body destroyed mid-way (a client that went away) would otherwise leave the put waiting forever.
   */
  async put(bucket: string, key: string, body: Readable | Buffer, contentType: string): Promise<void> {
    const put = this.call(() =>
      this.requireClient().putObject(bucket, key, body, undefined, { 'Content-Type': contentType }),
    );
    if (Buffer.isBuffer(body)) return void (await put);
    put.catch(() => undefined); // settled below, or moot once the body failed
    let onError: (err: Error) => void = () => undefined;
    const failed = new Promise<never>((_, reject) => {
      onError = reject;
      body.once('error', onError);
    });
    try {
      await Promise.race([put, failed]);
    } finally {
      body.off('error', onError);
    }
  }

  /** One object from chunks held in memory (a staged part): no copy, a CRC32 instead of SHA-256 + MD5 (see S3Requests). */
  async putChunks(
    bucket: string,
    key: string,
    chunks: readonly Buffer[],
    contentType: string,
  ): Promise<void> {
    await this.call(() => this.requireDirect().put(bucket, key, chunks, contentType));
  }

  /**
   * A whole object in one buffer of its own, checked against its CRC32 when it has one; null when
   * there is no such object. Refuses objects over `maxBytes`. `memory` may supply the buffer (see
   * BodyMemory; taken over plain HTTP only).
   */
  async getBuffer(
    bucket: string,
    key: string,
    maxBytes: number,
    memory?: BodyMemory,
  ): Promise<Buffer | null> {
    return this.call(() => this.requireDirect().get(bucket, key, maxBytes, memory));
  }

  /** Throws ObjectNotFoundError when there is no such object. */
  async get(bucket: string, key: string): Promise<Readable> {
    return this.call(() =>
      this.requireClient()
        .getObject(bucket, key)
        .catch((err: unknown) => {
          if ((err as { code?: string }).code === 'NoSuchKey') throw new ObjectNotFoundError(bucket, key);
          throw err;
        }),
    );
  }

  /** The object, or null when there is none (a part or marker not written yet). */
  async getIfExists(bucket: string, key: string): Promise<Readable | null> {
    return this.get(bucket, key).catch((err: unknown) => {
      if (err instanceof ObjectNotFoundError) return null;
      throw err;
    });
  }

  /** Throws ServiceUnavailableError when the store does not answer (or is not configured). */
  async probe(): Promise<void> {
    await this.call(() => this.requireClient().listBuckets());
  }

  /** Uploads a local file (multipart for large ones, so memory stays bounded). */
  async putFile(bucket: string, key: string, path: string): Promise<void> {
    await this.call(() => this.requireClient().fPutObject(bucket, key, path));
  }

  /** Streams an object into a local file (the client's fGetObject names its temp file after the ETag). */
  async download(bucket: string, key: string, path: string): Promise<void> {
    const body = await this.get(bucket, key);
    await this.call(() => pipeline(body, createWriteStream(path, { mode: 0o600 })));
  }

  /** A small object as text; larger than `maxBytes` is an error (config files, markers). */
  async readText(bucket: string, key: string, maxBytes: number): Promise<string> {
    const parts: Buffer[] = [];
    let size = 0;
    for await (const chunk of (await this.get(bucket, key)) as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) throw new ValidationError(`object '${key}' is larger than ${maxBytes} bytes`);
      parts.push(chunk);
    }
    return Buffer.concat(parts).toString('utf8');
  }

  /** Objects of a bucket under a prefix (recursively), with their ETag, so a changed object counts as new. */
  async list(bucket: string, prefix = ''): Promise<StoredObject[]> {
    return this.call(
      () =>
        new Promise((resolve, reject) => {
          const out: StoredObject[] = [];
          const stream = this.requireClient().listObjectsV2(bucket, prefix, true);
          stream.on('data', (o) => {
            if (o.name) {
              out.push({
                key: o.name,
                etag: o.etag ?? '',
                size: o.size ?? 0,
                lastModified: o.lastModified ?? new Date(0),
              });
            }
          });
          stream.on('error', reject);
          stream.on('end', () => resolve(out));
        }),
    );
  }

  async remove(bucket: string, key: string): Promise<void> {
    await this.call(() => this.requireClient().removeObject(bucket, key));
  }

  /** Removes many objects in batched requests (the S3 multi-delete takes up to 1000 keys). */
  async removeMany(bucket: string, keys: string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += 1000) {
      await this.call(() => this.requireClient().removeObjects(bucket, keys.slice(i, i + 1000)));
    }
  }

  private ensureBuckets(environment: string): Promise<void> {
    let p = this.ready.get(environment);
    if (!p) {
      p = this.call(async () => {
        const client = this.requireClient();
        for (const purpose of BUCKET_PURPOSES) {
          const name = bucketName(environment, purpose);
          if (!(await client.bucketExists(name))) {
            await client.makeBucket(name, this.config.objectStore.region).catch(async (err: unknown) => {
              // Another instance may have created it in between.
              if (!(await client.bucketExists(name))) throw err;
            });
          }
        }
      });
      p.catch(() => this.ready.delete(environment));
      this.ready.set(environment, p);
    }
    return p;
  }

  private requireClient(): Client {
    if (!this.client) {
      throw new ServiceUnavailableError(
        'objectstore',
        'the object store is not configured (OBJECT_STORE_ENDPOINT)',
      );
    }
    return this.client;
  }

  private requireDirect(): S3Requests {
    this.requireClient();
    return this.direct as S3Requests;
  }

  private async call<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (err) {
      if (err instanceof ServiceUnavailableError || err instanceof ObjectNotFoundError) throw err;
      throw new ServiceUnavailableError('objectstore', `the object store failed: ${errorMessage(err)}`);
    }
  }
}
