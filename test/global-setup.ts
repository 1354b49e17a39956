import { Client } from 'pg';
import { TEST_DATABASE_URL } from './support/env';
import { sweepStaleTestBuckets } from './support/sweep-buckets';

/**
 * Fails fast, with the fix, when the local peers are not running; then removes the buckets earlier
 * runs left in the object store (see sweepStaleTestBuckets).
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
  const swept = await sweepStaleTestBuckets().catch((err: unknown) => {
    // A store that cannot be swept only slows this run; the suites that need it say so themselves.
    console.warn(`could not sweep old test buckets: ${(err as Error).message}`);
    return null;
  });
  if (swept && swept.removed + swept.left > 0)
    console.log(
      `object store: removed ${swept.removed} buckets of earlier test runs (${swept.left} left for the next run)`,
    );
}
