import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, TapyardConfig, errorMessage } from '@tapyard/core';
import { AiService } from '@tapyard/ai';
import { EgressPolicy } from '@tapyard/egress';
import { PythonSandbox } from '@tapyard/sandbox';
import { Secret, SecretsService } from '@tapyard/secrets';
import { VectorStoreRegistry } from '@tapyard/vector-stores';
import { probeMongo, probeObjectStore, probePostgres, probeRedis } from './probes/data-stores.probe';
import { probeKafka } from './probes/kafka.probe';
import { probeStomp } from './probes/stomp.probe';
import { VECTOR_STORES, VectorStoreKey, probeVectorStore } from './probes/vector-stores.probe';

export type ServiceStatus =
  { status: 'up'; message?: string } | { status: 'down'; message: string } | { status: 'not_configured' };

export const CORE_SERVICES = ['postgres', 'redis', 'mongodb', 'minio', 'activemq', 'kafka'] as const;
export type CoreService = (typeof CORE_SERVICES)[number];

type Probe = ((signal: AbortSignal) => Promise<void>) | null;

/**
 * Live probes of every peer, run in parallel, each bounded by HEALTH_TIMEOUT_MS (2 s by default),
 * so the answer comes in about that time even when every peer is down or hangs.
 */
@Injectable()
export class HealthService {
  /**
   * Vector-store addresses come from secrets, a caller's choice: they pass the egress policy of the
   * environment probed (its TAP_EGRESS_ALLOW entries and the unscoped ones).
   */
  private readonly egress: EgressPolicy;

  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    private readonly secrets: SecretsService,
    private readonly ai: AiService,
    private readonly storeRegistry: VectorStoreRegistry,
  ) {
    this.egress = new EgressPolicy(config.egressAllow);
  }

  async all(environment: string): Promise<Record<string, ServiceStatus>> {
    const [core, vector, sandbox, ai] = await Promise.all([
      this.core(),
      this.vectorStores(environment),
      this.sandbox(environment),
      this.modelProvider(environment),
    ]);
    return { ...core, ...vector, sandbox, ai };
  }

  /** The `ai` secret's model provider: configured, and answering its model list within the bound. */
  async modelProvider(environment: string): Promise<ServiceStatus> {
    const t = this.config.healthTimeoutMs;
    try {
      // The secret store is read first: an outage there must not hold the whole answer.
      const s = await withDeadline(this.ai.status(environment, t), t);
      return s.status === 'not_configured' ? { status: 'not_configured' } : s;
    } catch (err) {
      return { status: 'down', message: errorMessage(err) };
    }
  }

  /**
   * The isolation tap scripts get on this instance (TAP_SANDBOX), beyond the spec's keys like `redis`;
   * the private endpoints counted are those `environment`'s runs may reach.
   */
  async sandbox(environment: string): Promise<ServiceStatus> {
    const taps = this.config.taps;
    const sandbox = new PythonSandbox({ bwrap: taps.sandbox, uids: taps.sandboxUids });
    if (taps.sandbox === 'off') {
      return {
        status: 'up',
        message:
          'TAP_SANDBOX=off: scripts run with limits only, on the host filesystem and network; ' +
          (await sandbox.separation()).detail,
      };
    }
    try {
      await sandbox.isolation();
    } catch (err) {
      return { status: 'down', message: `${errorMessage(err)}; tap runs are refused` };
    }
    const allowed = this.config.egressAllow.filter(
      (e) => e.environment === undefined || e.environment === environment,
    ).length;
    return {
      status: 'up',
      message:
        'bwrap: own namespaces and a private network; scripts reach public addresses through the ' +
        `platform's egress proxy (${allowed} allow-listed private endpoint${allowed === 1 ? '' : 's'}); ` +
        (await sandbox.separation()).detail,
    };
  }

  async core(): Promise<Record<CoreService, ServiceStatus>> {
    const results = await Promise.all(CORE_SERVICES.map((name) => this.run(this.coreProbe(name))));
    return Object.fromEntries(CORE_SERVICES.map((name, i) => [name, results[i]])) as Record<
      CoreService,
      ServiceStatus
    >;
  }

  async vectorStores(environment: string): Promise<Record<VectorStoreKey, ServiceStatus>> {
    let secrets: Secret[];
    try {
      secrets = await this.readSecrets(environment);
    } catch (err) {
      const down: ServiceStatus = {
        status: 'down',
        message: `cannot read the secret store: ${errorMessage(err)}`,
      };
      return Object.fromEntries(VECTOR_STORES.map((s) => [s, down])) as Record<VectorStoreKey, ServiceStatus>;
    }
    const results = await Promise.all(
      VECTOR_STORES.map((store) => {
        const factory = this.storeRegistry.factory(store);
        const secret = secrets.find((s) => s.name === store);
        if (secret) {
          return this.run(() =>
            probeVectorStore(store, factory, secret.fields, this.egress.for(environment)),
          );
        }
        // The operator's embedded default (PGVECTOR_URL): trusted like DATABASE_URL.
        const url = store === 'pgvector' ? this.config.pgvectorUrl : null;
        if (!url) return this.run(null);
        const u = new URL(url);
        const operator = new EgressPolicy([{ host: u.hostname, port: Number(u.port || 5432) }]);
        return this.run(() => probeVectorStore(store, factory, { connectionString: url }, operator));
      }),
    );
    return Object.fromEntries(VECTOR_STORES.map((s, i) => [s, results[i]])) as Record<
      VectorStoreKey,
      ServiceStatus
    >;
  }

  /** Every secret of the environment, bounded to a quarter of the probe budget. */
  readSecrets(environment: string): Promise<Secret[]> {
    return withDeadline(this.secrets.revealAll(environment), Math.ceil(this.config.healthTimeoutMs / 4));
  }

  private coreProbe(name: CoreService): Probe {
    const c = this.config;
    const t = c.healthTimeoutMs;
    switch (name) {
      case 'postgres':
        return async (signal) => void (await probePostgres({ connectionString: c.database.url }, t, signal));
      case 'redis':
        return (signal) => probeRedis(c.redis.url, t, signal);
      case 'mongodb':
        return c.mongodb.uri ? (signal) => probeMongo(c.mongodb.uri as string, t, signal) : null;
      case 'minio':
        return c.objectStore.endpoint
          ? (signal) =>
              probeObjectStore({ ...c.objectStore, endpoint: c.objectStore.endpoint as string }, signal)
          : null;
      case 'activemq':
        return c.activemq.url
          ? (signal) => probeStomp(c.activemq.url as string, c.activemq.user, c.activemq.password, signal)
          : null;
      case 'kafka':
        return c.kafka.brokers.length > 0 ? (signal) => probeKafka(c.kafka.brokers, signal) : null;
    }
  }

  private async run(probe: Probe): Promise<ServiceStatus> {
    if (!probe) return { status: 'not_configured' };
    const timeoutMs = this.config.healthTimeoutMs;
    const ac = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<ServiceStatus>((resolve) => {
      timer = setTimeout(() => {
        ac.abort();
        resolve({ status: 'down', message: `no answer within ${timeoutMs} ms` });
      }, timeoutMs);
    });
    const probed = probe(ac.signal).then(
      (): ServiceStatus => ({ status: 'up' }),
      (err: unknown): ServiceStatus => ({ status: 'down', message: errorMessage(err) || 'unreachable' }),
    );
    try {
      return await Promise.race([probed, timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }
}

function withDeadline<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, deadline]).finally(() => clearTimeout(timer));
}
