import Redis, { RedisOptions } from 'ioredis';

/**
 * A Redis connection of the platform's own beside BullMQ's (pub/sub hints, auth state): fails a command
 * fast instead of queueing it through an outage, and never lets a connection error reach the process's
 * `error` event; callers see failures per command. `role` names it in `CLIENT LIST`.
 */
export function sideConnection(url: string, role: string, options: RedisOptions = {}): Redis {
  const redis = new Redis(url, {
    connectTimeout: 2000,
    maxRetriesPerRequest: 1,
    connectionName: `tapyard-${role}-${process.pid}`,
    ...options,
  });
  redis.on('error', () => undefined);
  return redis;
}
