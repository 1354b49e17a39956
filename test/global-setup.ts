import { Client } from 'pg';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from './support/env';
import { sweepStaleTestTopics } from './support/kafka-topics';
import { sweepStaleTestBuckets } from './support/sweep-buckets';
import { sweepIdleEnvironmentKeys } from './support/redis-keys';

/** The local broker of scripts/services, when it runs (the sweep does not start it). */
const KAFKA_BROKERS = `127.0.0.1:${process.env.TAPYARD_KAFKA_PORT ?? '9092'}`;
/** Older than any run: a run in another checkout sharing these peers is never swept under itself. */
const STALE_MS = 3 * 3600_000;

/**
 * Fails fast, with the fix, when the local peers are not running; then removes the buckets earlier
 * runs left in the object store (see sweepStaleTestBuckets) and their topics in Kafka, when it runs
 * (the e2e environment removes a file's own at its end; these are what an interrupted run left).
 */
export default async function globalSetup(): Promise<void> {
  const client = new Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
  } catch (err) {
    throw new Error(
      `cannot reach the test database (${(err as Error).message}); run \`scripts/services up\` or use \`npm test\``,
      { cause: err },
    );
  } finally {
    await client.end().catch(() => undefined);
  }
  const [swept, topics, keys] = await Promise.all([
    sweepStaleTestBuckets().catch((err: unknown) => {
      // A store that cannot be swept only slows this run; the suites that need it say so themselves.
      console.warn(`could not sweep old test buckets: ${(err as Error).message}`);
      return null;
    }),
    // No broker (an optional peer) is no warning: the suites that need it start it.
    sweepStaleTestTopics(KAFKA_BROKERS, { olderThanMs: STALE_MS, budgetMs: 30_000 }).catch(() => null),
    sweepIdleEnvironmentKeys(TEST_REDIS_URL, { idleSeconds: STALE_MS / 1000 }).catch(() => 0),
  ]);
  if (keys > 0) console.log(`redis: removed ${keys} keys of earlier test runs`);
  if (topics && topics.removed > 0)
    console.log(`kafka: removed ${topics.removed} topics of earlier test runs`);
  if (swept && swept.removed + swept.left > 0)
    console.log(
      `object store: removed ${swept.removed} buckets of earlier test runs (${swept.left} left for the next run)`,
    );
}
