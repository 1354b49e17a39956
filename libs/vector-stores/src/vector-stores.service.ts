import { createHash } from 'node:crypto';
import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { ServiceUnavailableError, CONFIG, TapyardConfig } from '@tapyard/core';
import { EgressPolicy } from '@tapyard/egress';
import { VECTOR_STORES, VectorStoreName } from '@tapyard/model';
import { SecretNotFoundError, SecretsService } from '@tapyard/secrets';
import { VectorStoreRegistry } from './registry';
import type { VectorStore } from './vector-store';
import { VectorStoreErrorCode, VectorStoreInputError } from './vector-store.errors';

/**
 * The vector stores of an environment: each configured by the secret named after it (docs/documents.md, "Vector
 * store secrets"), pgvector also by the operator's PGVECTOR_URL. A secret's address is a caller's
 * choice and passes the egress policy; the operator's own address does not need to.
 */
@Injectable()
export class VectorStoresService implements OnModuleDestroy {
  private readonly policy: EgressPolicy;
  /** One client per environment and store, replaced (and closed) when its secret changes. */
  private readonly open = new Map<string, { fingerprint: string; store: VectorStore }>();

  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    private readonly secrets: SecretsService,
    private readonly registry: VectorStoreRegistry,
  ) {
    this.policy = new EgressPolicy(config.egressAllow);
  }

  /** Throws a 400 naming the valid stores for anything else. */
  static checkName(name: string): VectorStoreName {
    if (!(VECTOR_STORES as readonly string[]).includes(name)) {
      throw new VectorStoreInputError(
        `unknown vector store '${name}': use one of ${VECTOR_STORES.join(', ')}`,
      );
    }
    return name as VectorStoreName;
  }

  /** The store as configured now, or null when nothing configures it. */
  async find(environment: string, name: VectorStoreName): Promise<VectorStore | null> {
    const factory = this.registry.factory(name);
    if (!factory) return null;
    const configured = await this.configuration(environment, name);
    if (!configured) return null;
    const key = `${environment}\u0000${name}`;
    const fingerprint = createHash('sha256').update(JSON.stringify(configured.fields)).digest('hex');
    const known = this.open.get(key);
    if (known?.fingerprint === fingerprint) return known.store;
    const store = factory(configured.fields, configured.policy);
    this.open.set(key, { fingerprint, store });
    if (known) void known.store.close().catch(() => undefined);
    return store;
  }

  /** The store, or 503 saying how to configure it. */
  async get(environment: string, name: VectorStoreName): Promise<VectorStore> {
    if (!this.registry.factory(name)) {
      throw new ServiceUnavailableError(
        name,
        `vector store ${name} is not available in this deployment: no plug-in registers it`,
      ).coded(VectorStoreErrorCode.NotConfigured);
    }
    const store = await this.find(environment, name);
    if (!store) {
      throw new ServiceUnavailableError(
        name,
        `vector store ${name} is not configured in environment '${environment}': create the secret '${name}' (see docs/documents.md, "Vector store secrets")`,
      ).coded(VectorStoreErrorCode.NotConfigured);
    }
    return store;
  }

  async onModuleDestroy(): Promise<void> {
    const stores = [...this.open.values()];
    this.open.clear();
    await Promise.all(stores.map((s) => s.store.close().catch(() => undefined)));
  }

  private async configuration(
    environment: string,
    name: VectorStoreName,
  ): Promise<{ fields: Record<string, string>; policy: EgressPolicy } | null> {
    try {
      const fields = await this.secrets.reveal(environment, name);
      return { fields: fields as Record<string, string>, policy: this.policy.for(environment) };
    } catch (err) {
      if (!(err instanceof SecretNotFoundError)) throw err;
    }
    if (name === 'pgvector' && this.config.pgvectorUrl) {
      const u = new URL(this.config.pgvectorUrl);
      const operator = new EgressPolicy([{ host: u.hostname, port: Number(u.port || 5432) }]);
      return { fields: { connectionString: this.config.pgvectorUrl }, policy: operator };
    }
    return null;
  }
}
