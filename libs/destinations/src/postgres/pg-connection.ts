import { PoolClient } from 'pg';
import { ServiceUnavailableError, errorMessage, isConnectionFailure } from '@tapyard/core';
import { PgPools } from './pg-pools';
import { DestinationErrorCode } from '../destination-errors';

/**
 * Runs `work` on a connection to `database`; a connection that fails or is lost becomes a
 * ServiceUnavailableError, which the runner retries.
 */
export async function withPgClient<T>(
  pools: PgPools,
  database: string,
  work: (c: PoolClient) => Promise<T>,
): Promise<T> {
  let client: PoolClient;
  try {
    client = await pools.get(database).connect();
  } catch (err) {
    throw new ServiceUnavailableError(
      'postgres',
      `cannot connect to PostgreSQL database '${database}': ${errorMessage(err)}`,
    ).coded(DestinationErrorCode.Unavailable);
  }
  // The pool listens for errors of idle clients only: without a listener of our own, a connection
  // lost while checked out is an unhandled 'error' event, which ends the worker process.
  let lost = false;
  const onError = () => {
    lost = true;
  };
  client.on('error', onError);
  try {
    return await work(client);
  } catch (err) {
    // Lost mid-load: the transaction rolled back with the connection, or committed together with
    // its ledger row, so running the load again is safe (the runner retries ServiceUnavailableError).
    if (lost || isConnectionFailure(err)) {
      throw new ServiceUnavailableError(
        'postgres',
        `PostgreSQL database '${database}' became unreachable: ${errorMessage(err)}`,
      ).coded(DestinationErrorCode.Unavailable);
    }
    throw err;
  } finally {
    client.release();
    // After release: the pool has put its own listener back by then.
    client.removeListener('error', onError);
  }
}
