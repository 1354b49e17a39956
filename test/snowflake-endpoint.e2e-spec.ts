import { SecretsService } from '@tapyard/secrets';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { uniqueEnvironment } from './support/env';
import { upload, waitForJob } from './support/ingest';
import { peerFields } from './support/vector-peers';

/**
 * A Snowflake secret names Snowflake itself (an account URL under its domains) or an endpoint the
 * operator allow-listed: the server answering the driver decides which local files a PUT reads, where
 * it sends them and where a GET writes, so any other `accessUrl` is refused when the secret is saved
 * and again when a job loads (a secret saved before the rule). The allow-listed local stand-in loads.
 */
describe('the Snowflake endpoint a secret may name', () => {
  const env = uniqueEnvironment('sfe');
  const foreign = 'https://warehouse.attacker.example';
  let fields: Record<string, string>;
  let api: TestApi;
  let worker: TestWorker;

  const pipeline = (name: string, secretName: string) => ({
    name,
    source: {
      fileAttributes: { csvAttributes: { delimiter: ',', header: true } },
      schemaProperties: { fields: [{ name: 'id', type: 'int' }] },
    },
    destination: { snowflake: { secretName, table: `SFE_${name.toUpperCase()}` } },
  });

  beforeAll(async () => {
    fields = peerFields('snowflake');
    const { hostname, port } = new URL(fields.accessUrl);
    const flags = { TAPYARD_ENV: env, TAP_EGRESS_ALLOW: `${hostname}:${port}`, LOAD_RETRY_ATTEMPTS: '1' };
    api = await startApi(flags);
    worker = await startWorker(flags);
  });

  afterAll(async () => {
    await worker?.close();
    await api?.close();
  });

  it('refuses to save an accessUrl or account that does not name Snowflake, naming the field', async () => {
    const notSnowflake = await api.http
      .put('/api/v1/secrets/sf-foreign')
      .send({ ...fields, accessUrl: foreign })
      .expect(400);
    expect(notSnowflake.body.code).toBe('destination.endpoint_refused');
    expect(notSnowflake.body.details).toEqual([{ field: 'accessUrl', problem: expect.any(String) }]);
    expect(notSnowflake.body.message).toMatch(
      /accessUrl names warehouse\.attacker\.example:443, which is not a Snowflake account host/,
    );
    const account = await api.http
      .put('/api/v1/secrets/sf-foreign')
      .send({ ...fields, accessUrl: undefined, account: 'attacker.example/x' })
      .expect(400);
    expect(account.body.details).toEqual([{ field: 'account', problem: expect.any(String) }]);
    await api.http.get('/api/v1/secrets/sf-foreign').expect(404);

    // Snowflake's own hosts and secrets that are not Snowflake's are kept.
    await api.http
      .put('/api/v1/secrets/sf-cloud')
      .send({ ...fields, accessUrl: 'https://acme-prod.privatelink.snowflakecomputing.com' })
      .expect(200);
    await api.http.put('/api/v1/secrets/other').send({ accessUrl: foreign, token: 't' }).expect(200);
  });

  it('ends a load whose secret names another server with an error naming accessUrl', async () => {
    // Saved before the rule existed (stored as it is, past every write check): only the loader's own
    // check stands between it and the driver.
    await api.app.get(SecretsService).writeSystem(env, 'sf-old', { ...fields, accessUrl: foreign });
    await expect(
      api.app.get(SecretsService).put(env, 'sf-new', { ...fields, accessUrl: foreign }),
    ).rejects.toThrow(/accessUrl names warehouse\.attacker\.example:443/);
    await api.http.post('/api/v1/pipeline').send(pipeline('refused', 'sf-old')).expect(200);
    const done = await waitForJob(api.http, await upload(api.http, 'refused', 'id\n1\n2\n'));
    expect(done.rollup.status).toBe('error');
    expect(done.rollup.jobs[0].lastError).toEqual({
      processName: 'SnowflakeLoader',
      description: expect.stringMatching(
        /secret 'sf-old': accessUrl names warehouse\.attacker\.example:443, which is not a Snowflake account host/,
      ),
    });
  });

  it('loads through the stand-in the operator allow-listed', async () => {
    await api.http.put('/api/v1/secrets/sf').send(fields).expect(200);
    await api.http.post('/api/v1/pipeline').send(pipeline('allowed', 'sf')).expect(200);
    const done = await waitForJob(api.http, await upload(api.http, 'allowed', 'id\n1\n2\n'));
    expect(done.rollup.status).toBe('success');
  });
});
