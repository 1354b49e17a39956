import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, TapyardConfig } from '@tapyard/core';
import { AppAbility, buildAbility, isLegacy } from './ability';
import { ApiKeysService, KeyMatch } from './api-keys.service';
import { FULL_ACCESS } from './capability';
import { KeyDigests } from './key-values';
import { RUN_KEY_PREFIX, RunKeys } from './run-keys';
import { SessionStore } from './sessions';
import { ROLE_CAPABILITIES, Role } from './templates';
import { TenantsService } from './tenants.service';
import { UsersService } from './users.service';

export interface Identity {
  kind: 'anonymous' | 'key' | 'session';
  /** Key label, `session:<username>`, or `anonymous`: what audit lines call `key`. */
  name: string;
  capabilities: readonly string[];
  /** Holds the legacy full-access capability `*:*`. */
  legacy: boolean;
  /** The environment the request acts in: the tenant's in multi-tenant mode. */
  environment: string;
  ability: AppAbility;
  session?: { id: string; username: string; role: Role; csrf: string };
}

export type AuthFailure =
  'missing credentials' | 'unknown key' | 'revoked key' | 'rotated key' | 'unknown session';

export type AuthResult =
  { ok: true; identity: Identity } | { ok: false; reason: AuthFailure; label?: string };

export interface Credentials {
  apiKey: string | null;
  sessionId: string | null;
}

/**
 * Label given to a key that `api-key-mappings` maps to a tenant without a key record there, followed by
 * `:<16 hex digits of the key's HMAC digest>`: each such key is an identity of its own (attachments,
 * `owner=self`, audit lines), never one shared by every hand-mapped key of the tenant.
 */
export const TENANT_MAPPING_LABEL = 'tenant-mapping';

/** The authentication flags a console needs before anyone signs in. */
export interface AuthMode {
  useUserAuth: boolean;
  useApiKeys: boolean;
  multiTenant: boolean;
}

/**
 * Turns a request's credentials into an identity, following the spec's USE_USER_AUTH × USE_API_KEYS
 * table: both off is anonymous; a key (when keys are on) wins over a session cookie; with only user
 * auth on, requests without a cookie are anonymous programmatic clients.
 */
@Injectable()
export class Authenticator {
  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    private readonly keys: ApiKeysService,
    private readonly tenants: TenantsService,
    private readonly sessions: SessionStore,
    private readonly users: UsersService,
    private readonly runKeys: RunKeys,
    private readonly digests: KeyDigests,
  ) {}

  get enabled(): boolean {
    return this.config.auth.useApiKeys || this.config.auth.useUserAuth;
  }

  /** Which credentials this instance asks for (addendum: `GET /auth/mode`), and nothing more. */
  mode(): AuthMode {
    const { useUserAuth, useApiKeys, multiTenant } = this.config.auth;
    return { useUserAuth, useApiKeys, multiTenant };
  }

  anonymous(): Identity {
    return identity('anonymous', 'anonymous', [FULL_ACCESS], this.config.environment);
  }

  async authenticate(c: Credentials): Promise<AuthResult> {
    const { useApiKeys, useUserAuth } = this.config.auth;
    if (!useApiKeys && !useUserAuth) return { ok: true, identity: this.anonymous() };
    if (useApiKeys && c.apiKey !== null) return this.byKey(c.apiKey);
    if (useUserAuth && c.sessionId !== null) return this.bySession(c.sessionId);
    if (useApiKeys) return { ok: false, reason: 'missing credentials' };
    return { ok: true, identity: this.anonymous() };
  }

  private async byKey(value: string): Promise<AuthResult> {
    if (value.startsWith(RUN_KEY_PREFIX)) return this.byRunKey(value);
    const operator = this.config.environment;
    const own = await this.keys.match(operator, value);
    if (own.status !== 'unknown' || !this.config.auth.multiTenant) return fromMatch(own, operator);
    const tenant = await this.tenants.tenantOf(value);
    if (tenant === null) return { ok: false, reason: 'unknown key' };
    const inTenant = await this.keys.match(tenant, value);
    if (inTenant.status === 'unknown') {
      // Mapped by hand by the operator without a key record: full access inside that tenant only.
      // The HMAC digest (the mapping's own field name) tells such keys apart without revealing them.
      const name = `${TENANT_MAPPING_LABEL}:${this.digests.shortId(value)}`;
      return { ok: true, identity: identity('key', name, [FULL_ACCESS], tenant) };
    }
    return fromMatch(inTenant, tenant);
  }

  /** A tap run's own key: its grant names the environment, so no tenant mapping is consulted. */
  private async byRunKey(value: string): Promise<AuthResult> {
    const grant = await this.runKeys.find(value);
    if (!grant) return { ok: false, reason: 'unknown key' };
    return { ok: true, identity: identity('key', grant.label, grant.capabilities, grant.environment) };
  }

  private async bySession(id: string): Promise<AuthResult> {
    const environment = this.config.environment;
    const session = await this.sessions.get(environment, id);
    // Re-read the user: deletion, a new password or a new role (a new epoch) ends the session now.
    const user = session ? await this.users.find(environment, session.username) : null;
    if (!session || !user || session.epoch !== user.sessionEpoch)
      return { ok: false, reason: 'unknown session' };
    const id_ = identity('session', `session:${user.username}`, ROLE_CAPABILITIES[user.role], environment);
    id_.session = { id, username: user.username, role: user.role, csrf: session.csrf };
    return { ok: true, identity: id_ };
  }
}

function fromMatch(m: KeyMatch, environment: string): AuthResult {
  switch (m.status) {
    case 'active':
      return { ok: true, identity: identity('key', m.record.label, m.record.capabilities, environment) };
    case 'unknown':
      return { ok: false, reason: 'unknown key' };
    case 'revoked':
      return { ok: false, reason: 'revoked key', label: m.label };
    case 'rotated':
      return { ok: false, reason: 'rotated key', label: m.label };
  }
}

function identity(
  kind: Identity['kind'],
  name: string,
  capabilities: readonly string[],
  environment: string,
): Identity {
  return {
    kind,
    name,
    capabilities,
    legacy: isLegacy(capabilities),
    environment,
    ability: buildAbility(capabilities, name),
  };
}
