/**
 * The environment a piece of work runs in. Everything an environment owns (metadata rows, secrets,
 * buckets, queues) is keyed by it, so instances with different environments can share Postgres and
 * Redis. Today it is TAPYARD_ENV; multi-tenant mode resolves it per request.
 */
export type EnvironmentName = string;

/** Prefix of every Redis key BullMQ writes for an environment: queues are per environment. */
export function queuePrefix(environment: EnvironmentName): string {
  return `tapyard:${environment}`;
}
