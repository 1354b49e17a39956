import { Client } from 'pg';
import { TEST_DATABASE_URL } from './support/env';

/** Fails fast, with the fix, when the local peers are not running. */
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
}
