import { Inject, Injectable } from '@nestjs/common';
import { Logger } from 'pino';
import {
  CONFIG,
  ConflictError,
  LOGGER,
  NotFoundError,
  TapyardConfig,
  ValidationError,
  errorMessage,
} from '@tapyard/core';
import { SecretFields, apiKeysSecretName } from '@tapyard/secrets';
import { Grantor, assertMayGrant } from './ability';
import { FULL_ACCESS, validateCapabilities } from './capability';
import { KeyDigests, PresentedKey, isLegacyDigest, matchesDigest, newKeyValue } from './key-values';
import { KeyUsage } from './key-usage';
import { SecretState } from './secret-state';
import { TEMPLATES, TEMPLATE_NAMES, TemplateName } from './templates';
import { AuthErrorCode } from './auth-errors';
import { TenantsService } from './tenants.service';

/** One key of the map kept in the secret `<environment>/api-keys`: digests only, never a value. */
export interface KeyRecord {
  label: string;
  /** `hmac:<hex>` (KeyDigests); a bare SHA-256 hex from before is upgraded on first use. */
  hash: string;
  capabilities: string[];
  template: TemplateName | null;
  createdAt: string;
  revokedAt: string | null;
  /** Hashes of values replaced by rotation (newest first), so their use logs as `rotated key`. */
  retired: string[];
}

export interface KeyView {
  label: string;
  capabilities: string[];
  template: TemplateName | null;
  createdAt: string;
  lastUsedAt: string | null;
  revoked: boolean;
}

export type KeyMatch =
  | { status: 'active'; record: KeyRecord }
  | { status: 'revoked' | 'rotated'; label: string }
  | { status: 'unknown' };

export type IssueRequest = { template: string } | { capabilities: string[] };

const LABEL = /^[a-z][a-z0-9_-]{0,62}$/;
const RESERVED_LABELS = new Set(['ui']);
export const BOOTSTRAP_LABEL = 'bootstrap';
const RETIRED_KEPT = 10;

@Injectable()
export class ApiKeysService {
  constructor(
    private readonly state: SecretState,
    private readonly usage: KeyUsage,
    private readonly digests: KeyDigests,
    private readonly tenants: TenantsService,
    @Inject(CONFIG) private readonly config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /**
   * Finds the key a presented value belongs to. Every stored digest is compared in constant time and
   * the loop never exits early, so timing reveals neither a match nor its position. A key still
   * stored under a SHA-256 digest from before is upgraded to HMAC the first time it authenticates.
   */
  async match(environment: string, value: string): Promise<KeyMatch> {
    const presented = this.digests.presented(value);
    let found: KeyMatch = { status: 'unknown' };
    for (const record of await this.records(environment)) {
      const current = matchesDigest(record.hash, presented);
      let retired = false;
      for (const old of record.retired) retired = matchesDigest(old, presented) || retired;
      if (current && record.revokedAt === null) found = { status: 'active', record };
      else if (current) found = { status: 'revoked', label: record.label };
      else if (retired) found = { status: record.revokedAt ? 'revoked' : 'rotated', label: record.label };
    }
    if (found.status === 'active') {
      this.usage.touch(environment, found.record.label);
      if (isLegacyDigest(found.record.hash)) await this.upgrade(environment, found.record.label, presented);
    }
    return found;
  }

  async list(environment: string): Promise<KeyView[]> {
    const [records, used] = await Promise.all([this.records(environment), this.usage.lastUsed(environment)]);
    return records
      .map((r) => ({
        label: r.label,
        capabilities: r.capabilities,
        template: r.template,
        createdAt: r.createdAt,
        lastUsedAt: used.get(r.label)?.toISOString() ?? null,
        revoked: r.revokedAt !== null,
      }))
      .sort((a, b) => a.label.localeCompare(b.label));
  }

  /** The caller must hold every capability it gives the new key. */
  async issue(
    environment: string,
    label: string,
    request: IssueRequest,
    grantor: Grantor,
  ): Promise<{ label: string; key: string; capabilities: string[] }> {
    validateLabel(label);
    const { capabilities, template } = grantOf(request);
    assertMayGrant(grantor, capabilities, `issue key '${label}'`);
    const key = newKeyValue();
    const record: KeyRecord = {
      label,
      hash: this.digests.digest(key),
      capabilities,
      template,
      createdAt: new Date().toISOString(),
      revokedAt: null,
      retired: [],
    };
    await this.withTenantMapping(environment, record.hash, () =>
      this.state.mutate(environment, apiKeysSecretName(environment), (fields) => {
        if (fields[label] !== undefined)
          throw new ConflictError(`an API key labelled '${label}' already exists`).coded(
            AuthErrorCode.KeyExists,
          );
        fields[label] = JSON.stringify(record);
      }),
    );
    return { label, key, capabilities };
  }

  /**
   * New value server-side; the old one fails from the moment this returns. The caller receives a
   * working value, so it must hold everything the key holds (`key:update` alone cannot take over
   * `bootstrap`).
   */
  async rotate(
    environment: string,
    label: string,
    grantor: Grantor,
  ): Promise<{ label: string; key: string }> {
    const key = newKeyValue();
    const hash = this.digests.digest(key);
    await this.withTenantMapping(environment, hash, () =>
      this.state.mutate(environment, apiKeysSecretName(environment), (fields) => {
        const record = parseRecord(fields[label]);
        if (!record)
          throw new NotFoundError(`API key '${label}' does not exist`).coded(AuthErrorCode.KeyNotFound);
        assertMayGrant(grantor, record.capabilities, `rotate key '${label}'`);
        if (record.revokedAt)
          throw new ConflictError(`API key '${label}' is revoked and cannot be rotated`).coded(
            AuthErrorCode.KeyRevoked,
          );
        record.retired = [record.hash, ...record.retired].slice(0, RETIRED_KEPT);
        record.hash = hash;
        fields[label] = JSON.stringify(record);
      }),
    );
    return { label, key };
  }

  /**
   * A key of a tenant environment authenticates through its `api-key-mappings` entry, so the new
   * digest is mapped before the key record names it: if the mapping cannot be written, the record is
   * untouched (a rotated key keeps its old value) instead of committing a value that can never sign
   * in. A mapping left behind by a failed record names a value nobody was given; it is removed.
   */
  private async withTenantMapping(
    environment: string,
    digest: string,
    commit: () => Promise<unknown>,
  ): Promise<void> {
    if (!this.config.auth.multiTenant || environment === this.config.environment) {
      await commit();
      return;
    }
    await this.tenants.map(digest, environment);
    try {
      await commit();
    } catch (err) {
      await this.tenants
        .unmapDigest(digest)
        .catch((cleanup: unknown) =>
          this.logger.warn(
            { environment, err: errorMessage(cleanup) },
            'the mapping of a key that was not committed stays behind (its value was never given out)',
          ),
        );
      throw err;
    }
  }

  /**
   * Permanent: the record (and its digest) stays so later attempts log as `revoked key`. Like
   * rotation it needs everything the key holds, so a `key:delete` key cannot cut off `bootstrap`.
   */
  async revoke(environment: string, label: string, grantor: Grantor): Promise<void> {
    await this.state.mutate(environment, apiKeysSecretName(environment), (fields) => {
      const record = parseRecord(fields[label]);
      if (!record)
        throw new NotFoundError(`API key '${label}' does not exist`).coded(AuthErrorCode.KeyNotFound);
      assertMayGrant(grantor, record.capabilities, `revoke key '${label}'`);
      record.revokedAt ??= new Date().toISOString();
      fields[label] = JSON.stringify(record);
    });
  }

  /**
   * TAPYARD_BOOTSTRAP_API_KEY as the full-access key `bootstrap`. A value that was revoked or rotated
   * out stays so across restarts; a new value replaces the old one. Its digests are upgraded from
   * SHA-256 here, at boot, since a hand-picked value is the one a leaked map would give away.
   */
  async ensureBootstrap(environment: string): Promise<void> {
    const value = this.config.auth.bootstrapApiKey;
    if (!this.config.auth.useApiKeys || value === null) return;
    const presented = this.digests.presented(value);
    const name = apiKeysSecretName(environment);
    const current = parseRecord((await this.state.read(environment, name))[BOOTSTRAP_LABEL]);
    if (current && bootstrapSettled(current, presented)) return;
    await this.state.mutate(environment, name, (fields) => {
      const existing = parseRecord(fields[BOOTSTRAP_LABEL]);
      if (existing && bootstrapSettled(existing, presented)) return;
      if (existing && knows(existing, presented)) {
        fields[BOOTSTRAP_LABEL] = JSON.stringify(upgraded(existing, presented));
        return;
      }
      const record: KeyRecord = {
        label: BOOTSTRAP_LABEL,
        hash: presented.hmac,
        capabilities: [FULL_ACCESS],
        template: 'full-access',
        createdAt: new Date().toISOString(),
        revokedAt: null,
        retired: existing ? [existing.hash, ...existing.retired].slice(0, RETIRED_KEPT) : [],
      };
      fields[BOOTSTRAP_LABEL] = JSON.stringify(record);
    });
  }

  /** Rewrites a record's SHA-256 digest of the presented value as its HMAC; best effort, retried on next use. */
  private async upgrade(environment: string, label: string, presented: PresentedKey): Promise<void> {
    try {
      await this.state.mutate(environment, apiKeysSecretName(environment), (fields) => {
        const record = parseRecord(fields[label]);
        if (record && knows(record, presented)) fields[label] = JSON.stringify(upgraded(record, presented));
      });
      this.logger.info({ label }, 'API key digest upgraded to HMAC');
    } catch (err) {
      this.logger.warn({ label, err: errorMessage(err) }, 'API key digest not upgraded; retried on next use');
    }
  }

  private async records(environment: string): Promise<KeyRecord[]> {
    return recordsOf(await this.state.read(environment, apiKeysSecretName(environment)));
  }
}

/** Does the record hold the presented value, as its current or a retired digest, in either format? */
function knows(record: KeyRecord, presented: PresentedKey): boolean {
  return [record.hash, ...record.retired].some((d) => d === presented.hmac || d === presented.legacy);
}

/** The configured bootstrap value is the record's (active, revoked or rotated out), and stored as HMAC. */
function bootstrapSettled(record: KeyRecord, presented: PresentedKey): boolean {
  const digests = [record.hash, ...record.retired];
  return digests.includes(presented.hmac) && !digests.includes(presented.legacy);
}

/** The record with every SHA-256 digest of the presented value replaced by its HMAC. */
function upgraded(record: KeyRecord, presented: PresentedKey): KeyRecord {
  const swap = (d: string) => (d === presented.legacy ? presented.hmac : d);
  return { ...record, hash: swap(record.hash), retired: record.retired.map(swap) };
}

function recordsOf(fields: SecretFields): KeyRecord[] {
  return Object.values(fields)
    .map(parseRecord)
    .filter((r): r is KeyRecord => r !== null);
}

function parseRecord(text: string | undefined): KeyRecord | null {
  if (text === undefined) return null;
  try {
    return JSON.parse(text) as KeyRecord;
  } catch {
    return null;
  }
}

function validateLabel(label: string): void {
  if (RESERVED_LABELS.has(label) || label === BOOTSTRAP_LABEL) {
    throw new ValidationError(`label '${label}' is reserved`).coded(AuthErrorCode.InvalidKey);
  }
  if (!LABEL.test(label)) {
    throw new ValidationError(
      `label '${label.slice(0, 64)}' is invalid: use lowercase letters, digits, '-' and '_', starting with a letter (max 63)`,
    ).coded(AuthErrorCode.InvalidKey);
  }
}

function grantOf(request: IssueRequest): { capabilities: string[]; template: TemplateName | null } {
  if ('template' in request) {
    if (!(TEMPLATE_NAMES as string[]).includes(request.template)) {
      throw new ValidationError(
        `template '${request.template}' is unknown (one of ${TEMPLATE_NAMES.join(', ')})`,
      ).coded(AuthErrorCode.InvalidKey);
    }
    const template = request.template as TemplateName;
    return { capabilities: [...TEMPLATES[template]], template };
  }
  return { capabilities: validateCapabilities(request.capabilities), template: null };
}
