import { Injectable } from '@nestjs/common';
import { Secret } from '@tapyard/secrets';
import { HealthService } from './health.service';
import { VECTOR_STORES, VectorStoreKey } from './probes/vector-stores.probe';

/** Which fields make a complete credential set for a warehouse destination (any one alternative). */
const WAREHOUSE_CREDENTIALS: Record<'snowflake' | 'databricks', string[][]> = {
  // Contract addendum, "Destination sections": what makes a complete credential set.
  snowflake: [
    ['account', 'user', 'password', 'warehouse', 'database', 'schema'],
    ['account', 'user', 'privateKey', 'warehouse', 'database', 'schema'],
  ],
  databricks: [['host', 'token', 'warehouseId', 'catalog', 'schema']],
};

export function hasCompleteCredentials(kind: keyof typeof WAREHOUSE_CREDENTIALS, secrets: Secret[]): boolean {
  return secrets.some((s) =>
    WAREHOUSE_CREDENTIALS[kind].some((set) => set.every((f) => !!s.fields[f]?.trim())),
  );
}

@Injectable()
export class AvailabilityService {
  constructor(private readonly health: HealthService) {}

  /** Destinations usable now: live-probed stores and sinks, and warehouses with credentials. */
  async destinations(environment: string): Promise<string[]> {
    const [core, secrets] = await Promise.all([
      this.health.core(),
      this.health.readSecrets(environment).catch((): Secret[] => []),
    ]);
    const out: string[] = [];
    if (core.postgres.status === 'up') out.push('postgres');
    if (core.mongodb.status === 'up') out.push('mongodb');
    if (core.minio.status === 'up') out.push('objectstore');
    if (core.kafka.status === 'up') out.push('kafka');
    if (core.activemq.status === 'up') out.push('activemq');
    if (hasCompleteCredentials('snowflake', secrets)) out.push('snowflake');
    if (hasCompleteCredentials('databricks', secrets)) out.push('databricks');
    return out;
  }

  async vectorStores(environment: string): Promise<VectorStoreKey[]> {
    const status = await this.health.vectorStores(environment);
    return VECTOR_STORES.filter((s) => status[s].status === 'up');
  }
}
