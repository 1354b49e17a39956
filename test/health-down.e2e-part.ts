import { HealthService, AvailabilityService } from '@tapyard/health';
import { SecretsService } from '@tapyard/secrets';
import { AiService } from '@tapyard/ai';
import { VECTOR_STORE_PLUGINS, VectorStoreRegistry } from '@tapyard/vector-stores';
import { createLogger, loadConfig } from '@tapyard/core';
import { LogCapture } from './support/log-capture';
import { testEnv } from './support/env';
import { blackhole, closedPort } from './support/net';

describe('health when every peer is down', () => {
  it('answers within ~2.5 s and says why each one is down', async () => {
    const closed = await closedPort();
    const hang = await blackhole();
    const config = loadConfig(
      testEnv({
        DATABASE_URL: `postgres://postgres@127.0.0.1:${hang.port}/x`,
        REDIS_URL: `redis://127.0.0.1:${closed}`,
        MONGODB_URI: `mongodb://127.0.0.1:${hang.port}`,
        OBJECT_STORE_ENDPOINT: `http://127.0.0.1:${hang.port}`,
        KAFKA_BROKERS: `127.0.0.1:${closed}`,
        ACTIVEMQ_URL: `stomp://127.0.0.1:${hang.port}`,
      }),
    );
    // The secret store is Postgres, which hangs: the double answers as the real one would, never.
    const secrets = {
      revealAll: () => new Promise(() => undefined),
      reveal: () => new Promise(() => undefined),
    } as unknown as SecretsService;
    const logger = createLogger('error', 'api', new LogCapture());
    const health = new HealthService(
      config,
      secrets,
      new AiService(config, logger, secrets),
      new VectorStoreRegistry(VECTOR_STORE_PLUGINS),
    );
    try {
      const started = Date.now();
      const status = await health.all(config.environment);
      expect(Date.now() - started).toBeLessThan(3000); // 2 s probes + slack for a loaded 2-core CI machine
      expect(status.postgres).toEqual({ status: 'down', message: 'no answer within 2000 ms' });
      expect(status.redis.status).toBe('down');
      expect((status.redis as { message: string }).message).toMatch(/ECONNREFUSED|connect/);
      expect(status.kafka.status).toBe('down');
      expect((status.kafka as { message: string }).message).toMatch(
        /no Kafka broker answered .*ECONNREFUSED/,
      );
      for (const s of ['mongodb', 'minio', 'activemq'] as const) expect(status[s].status).toBe('down');
      for (const s of ['qdrant', 'weaviate', 'milvus', 'chroma', 'pgvector'] as const) {
        expect(status[s]).toEqual({
          status: 'down',
          message: 'cannot read the secret store: no answer within 500 ms',
        });
      }
      expect(status.ai).toEqual({ status: 'down', message: 'no answer within 2000 ms' });
      expect(await new AvailabilityService(health).destinations(config.environment)).toEqual([]);
    } finally {
      await hang.close();
    }
  });
});
