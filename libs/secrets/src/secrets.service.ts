import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, TapyardConfig, ValidationError } from '@tapyard/core';
import { maskFields } from './masking';
import { SecretCipher } from './secret-cipher';
import { SecretErrorCode, SecretNotFoundError, SecretUnreadableError } from './secrets.errors';
import { SecretsRepository } from './secrets.repository';
import { SecretEntity } from './secret.entity';

export type SecretFields = Record<string, string>;

export type SecretChangeListener = (environment: string, name: string) => Promise<void>;

export interface Secret {
  name: string;
  fields: SecretFields;
}

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._\-/]{0,199}$/;
const FIELD_RE = /^[A-Za-z_][A-Za-z0-9_.-]{0,127}$/;
const MAX_FIELDS = 100;
const MAX_VALUE_CHARS = 64 * 1024;

/**
 * Secrets of an environment, encrypted at rest. `get` masks sensitive fields for API callers;
 * `reveal` returns plaintext for platform code (loaders, probes, tap runs) and never for HTTP.
 */

/** A rule on a secret's fields, run before it is saved in `environment`. */
type WriteCheck = (name: string, fields: Record<string, string>, environment: string) => void;
@Injectable()
export class SecretsService {
  private readonly cipher: SecretCipher;
  private readonly listeners: SecretChangeListener[] = [];

  constructor(
    private readonly repo: SecretsRepository,
    @Inject(CONFIG) config: TapyardConfig,
  ) {
    this.cipher = new SecretCipher(config.masterKey);
  }

  /** Names of the environment's secrets; the platform's access state is not among them. */
  async list(environment: string): Promise<string[]> {
    return (await this.repo.listNames(environment)).filter((n) => !isAccessSecret(n));
  }

  async get(environment: string, name: string): Promise<Secret> {
    return { name, fields: maskFields(await this.reveal(environment, name)) };
  }

  /**
   * Plaintext of a secret named by a user (the API, a tap's or a destination's `secretName`). The
   * access state answers as absent: no user-named path leads to it (platform code uses readSystem).
   */
  async reveal(environment: string, name: string): Promise<SecretFields> {
    validateName(name);
    const row = isAccessSecret(name) ? null : await this.repo.find(environment, name);
    if (!row) throw new SecretNotFoundError(name);
    return this.open(row);
  }

  /** Every user secret of the environment, opened; unreadable rows are skipped, not fatal. */
  async revealAll(environment: string): Promise<Secret[]> {
    const rows = await this.repo.findAll(environment);
    const out: Secret[] = [];
    for (const row of rows) {
      if (isAccessSecret(row.name)) continue;
      try {
        out.push({ name: row.name, fields: this.open(row) });
      } catch {
        // An unreadable row (other master key) must not hide the others.
      }
    }
    return out;
  }

  /**
   * Rules other modules hold on a secret's fields (a destination's, registered at boot: secrets do not
   * depend on destinations): each throws a ValidationError naming the field it refuses. `environment`:
   * the one the secret is saved in.
   */
  private readonly writeChecks: WriteCheck[] = [];

  addWriteCheck(check: WriteCheck): void {
    this.writeChecks.push(check);
  }

  async put(environment: string, name: string, fields: unknown): Promise<void> {
    validateName(name);
    refuseAccessState(name);
    const valid = validateFields(fields);
    for (const check of this.writeChecks) check(name, valid, environment);
    await this.repo.upsert(environment, name, this.cipher.seal(JSON.stringify(valid), environment, name));
    await this.changed(environment, name);
  }

  async delete(environment: string, name: string): Promise<void> {
    validateName(name);
    if (isAccessSecret(name) || !(await this.repo.delete(environment, name))) {
      throw new SecretNotFoundError(name);
    }
    await this.changed(environment, name);
  }

  /** For platform code keeping its own state in a secret (the API-key map): null when absent. */
  async readSystem(environment: string, name: string): Promise<SecretFields | null> {
    const row = await this.repo.find(environment, name);
    return row ? this.open(row) : null;
  }

  /** Writes platform-managed state; field names and sizes are the platform's own, not user input. */
  async writeSystem(environment: string, name: string, fields: SecretFields): Promise<void> {
    await this.repo.upsert(environment, name, this.cipher.seal(JSON.stringify(fields), environment, name));
    await this.changed(environment, name);
  }

  /** Called after any write or delete, e.g. to invalidate caches on every API instance. */
  onChange(listener: SecretChangeListener): void {
    this.listeners.push(listener);
  }

  private async changed(environment: string, name: string): Promise<void> {
    for (const l of this.listeners) await l(environment, name);
  }

  private open(row: SecretEntity): SecretFields {
    try {
      return JSON.parse(this.cipher.open(row, row.environment, row.name)) as SecretFields;
    } catch {
      throw new SecretUnreadableError(row.name);
    }
  }
}

/** The secret of the operator environment (TAPYARD_ENV) that maps API keys to tenant environments. */
export const TENANT_MAPPINGS_SECRET = 'api-key-mappings';

const API_KEYS_SUFFIX = '/api-keys';

/** The API-key map of an environment: written only through the keys API, never through /secrets. */
export function apiKeysSecretName(environment: string): string {
  return `${environment}${API_KEYS_SUFFIX}`;
}

/**
 * Names of the platform's access state (the key maps, the tenant mappings), reserved in every
 * environment: a tenant naming the operator's key map is refused like the operator itself. They are
 * never listed, read, written or deleted through the Secrets API, nor handed to user code such as
 * tap scripts.
 */
export function isAccessSecret(name: string): boolean {
  return name === TENANT_MAPPINGS_SECRET || name.endsWith(API_KEYS_SUFFIX);
}

function refuseAccessState(name: string): void {
  if (isAccessSecret(name)) {
    throw new ValidationError(
      `secret '${name}' is reserved for the platform's access state (API keys, tenant mappings), managed by the keys API (/keys)`,
    ).coded(SecretErrorCode.Reserved);
  }
}

function validateName(name: string): void {
  if (!NAME_RE.test(name) || name.includes('..')) {
    throw new ValidationError(
      `secret name '${name.slice(0, 80)}' is invalid: use 1-200 characters of A-Z, a-z, 0-9, '.', '_', '-' and '/', starting with a letter or digit`,
    ).coded(SecretErrorCode.InvalidName);
  }
}

function validateFields(fields: unknown): SecretFields {
  if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) {
    throw new ValidationError('secret body must be a JSON object of field names to string values').coded(
      SecretErrorCode.InvalidBody,
    );
  }
  const entries = Object.entries(fields as Record<string, unknown>);
  if (entries.length === 0)
    throw new ValidationError('secret body must hold at least one field').coded(SecretErrorCode.InvalidBody);
  if (entries.length > MAX_FIELDS) {
    throw new ValidationError(`secret has ${entries.length} fields; at most ${MAX_FIELDS} are allowed`).coded(
      SecretErrorCode.InvalidBody,
    );
  }
  const details: { field: string; problem: string }[] = [];
  for (const [k, v] of entries) {
    if (!FIELD_RE.test(k))
      details.push({ field: k, problem: 'field names use letters, digits, _ . - (max 128)' });
    else if (typeof v !== 'string') details.push({ field: k, problem: `must be a string, got ${typeOf(v)}` });
    else if (v.length > MAX_VALUE_CHARS)
      details.push({ field: k, problem: `longer than ${MAX_VALUE_CHARS} characters` });
  }
  if (details.length > 0) {
    // Names only: the offending values may be secret.
    throw new ValidationError(`secret field '${details[0].field}' ${details[0].problem}`, details).coded(
      SecretErrorCode.InvalidBody,
    );
  }
  return Object.fromEntries(entries) as SecretFields;
}

function typeOf(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
}
