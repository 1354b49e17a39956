import { Injectable, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { SecretFields, SecretsService } from '@tapyard/secrets';
import { AuthRedis } from './auth.redis';

interface Cached {
  version: string;
  fields: SecretFields;
  at: number;
}

/** Safety net should a version bump be lost (Redis failing between a write and its bump). */
const MAX_CACHE_AGE_MS = 30000;

/**
 * Auth state kept in secrets (the key map, the tenant mappings), read on every authenticated request.
 * Each instance caches a secret's fields under a version counter in Redis that every write bumps, so a
 * rotation or revocation is seen by all API instances on their next request, at the cost of one
 * Redis GET instead of a Postgres read and a decryption.
 */
@Injectable()
export class SecretState implements OnModuleInit {
  private readonly cache = new Map<string, Cached>();

  constructor(
    private readonly secrets: SecretsService,
    private readonly redis: AuthRedis,
    @InjectDataSource() private readonly db: DataSource,
  ) {}

  onModuleInit(): void {
    this.secrets.onChange((environment, name) => this.bump(environment, name));
  }

  async read(environment: string, name: string): Promise<SecretFields> {
    const key = versionKey(environment, name);
    // Version first, then data: a version that moved implies its write is committed.
    const version = await this.redis.run((r) => r.get(key)).catch(() => null);
    const hit = this.cache.get(key);
    if (version !== null && hit && hit.version === version && Date.now() - hit.at < MAX_CACHE_AGE_MS) {
      return hit.fields;
    }
    const fields = ownFields(await this.secrets.readSystem(environment, name));
    // Without a version (Redis down, or never written) every read goes to Postgres: slower, never stale.
    if (version === null) this.cache.delete(key);
    else this.cache.set(key, { version, fields, at: Date.now() });
    return fields;
  }

  /** Read-modify-write under a Postgres advisory lock, so concurrent writers on any instance serialise. */
  async mutate<T>(environment: string, name: string, change: (fields: SecretFields) => T): Promise<T> {
    return this.db.transaction(async (m) => {
      await m.query('SELECT pg_advisory_xact_lock(hashtext($1))', [
        `tapyard-secret-state:${environment}:${name}`,
      ]);
      // Bump before writing too: with Redis down the change is refused (503) before anything is written.
      await this.bump(environment, name);
      const fields = ownFields(await this.secrets.readSystem(environment, name));
      const result = change(fields);
      await this.secrets.writeSystem(environment, name, fields);
      return result;
    });
  }

  private async bump(environment: string, name: string): Promise<void> {
    await this.redis.run((r) => r.incr(versionKey(environment, name)));
  }
}

/**
 * Field names here are key labels and digests: a label such as `constructor` must find nothing (and
 * `__proto__` must set nothing) but its own field, so the fields live in an object without a prototype.
 */
function ownFields(fields: SecretFields | null): SecretFields {
  return Object.assign(Object.create(null) as SecretFields, fields ?? {});
}

function versionKey(environment: string, name: string): string {
  return `tapyard:${environment}:auth:version:${name}`;
}
