import { Client } from 'pg';
import { QueryFailedError } from 'typeorm';
import { PipelineNotFoundError } from '@tapyard/pipelines';
import { pipelineError } from './stage-error';

/** A real driver error: what a closed port gives the pg client. */
async function refused(): Promise<Error> {
  const client = new Client({ host: '127.0.0.1', port: 1, connectionTimeoutMillis: 2000 });
  return client.connect().then(
    () => new Error('connected to port 1?'),
    (err: Error) => err,
  );
}

describe('pipelineError', () => {
  it('calls a missing pipeline gone, for good', () => {
    const e = pipelineError('sales', new PipelineNotFoundError('sales'));
    expect(e).toMatchObject({ message: "pipeline 'sales' no longer exists", retryable: false });
  });

  it('calls an unreachable metadata database an outage to retry, also inside a TypeORM error', async () => {
    const driver = await refused();
    for (const err of [driver, new QueryFailedError('SELECT 1', [], driver)]) {
      const e = pipelineError('sales', err);
      expect(e.retryable).toBe(true);
      expect(e.message).toMatch(/^postgres \(the metadata database\) is unavailable: .*ECONNREFUSED/);
      expect(e.message).not.toContain('no longer exists');
    }
  });

  it('keeps other failures final with their own message', () => {
    expect(pipelineError('sales', new Error('pipeline sales is being deleted'))).toMatchObject({
      message: 'pipeline sales is being deleted',
      retryable: false,
    });
  });
});
