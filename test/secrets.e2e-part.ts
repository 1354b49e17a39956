import { Client } from 'pg';
import { MASK } from '@tapyard/secrets';
import { TestApi, startApi } from './support/apps';
import { TEST_DATABASE_URL, uniqueEnvironment } from './support/env';

describe('Secrets API (real Postgres)', () => {
  let a: TestApi;
  let b: TestApi;
  let pg: Client;

  beforeAll(async () => {
    a = await startApi({ TAPYARD_ENV: uniqueEnvironment('sec-a') });
    b = await startApi({ TAPYARD_ENV: uniqueEnvironment('sec-b') });
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
  });

  afterAll(async () => {
    await pg.end();
    await a.close();
    await b.close();
  });

  it('creates, reads masked, lists, updates and deletes a secret', async () => {
    const fields = {
      username: 'loader',
      password: 'hunter2-pw',
      apiKey: 'ak-123456',
      secretKey: 'sk-abcdef',
      token: 'tok-777',
      secret: 'shh-999',
      host: 'db.internal',
    };
    await a.http.put('/api/v1/secrets/warehouse').send(fields).expect(200, { status: 'ok' });

    const got = await a.http.get('/api/v1/secrets/warehouse').expect(200);
    expect(got.body).toEqual({
      name: 'warehouse',
      fields: {
        username: 'loader',
        password: MASK,
        apiKey: MASK,
        secretKey: MASK,
        token: MASK,
        secret: MASK,
        host: 'db.internal',
      },
    });
    expect(MASK).toBe('\u2022\u2022\u2022\u2022\u2022\u2022\u2022\u2022');
    expect(JSON.stringify(got.body)).not.toMatch(/hunter2|ak-123|sk-abc|tok-777|shh-999/);

    expect((await a.http.get('/api/v1/secrets').expect(200)).body).toEqual(['warehouse']);

    await a.http.put('/api/v1/secrets/warehouse').send({ username: 'other' }).expect(200);
    expect((await a.http.get('/api/v1/secrets/warehouse').expect(200)).body.fields).toEqual({
      username: 'other',
    });

    await a.http.delete('/api/v1/secrets/warehouse').expect(200, { status: 'ok' });
    const missing = await a.http.get('/api/v1/secrets/warehouse').expect(404);
    expect(missing.body).toEqual({
      statusCode: 404,
      error: 'Not Found',
      code: 'secret.not_found',
      message: "secret 'warehouse' does not exist",
    });
    await a.http.delete('/api/v1/secrets/warehouse').expect(404);
  });

  it('masks the credentials the platform reads under other names: a private key, a password in a URL', async () => {
    const privateKey =
      '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----';
    await a.http
      .put('/api/v1/secrets/snowflake')
      .send({ account: 'xy12345', user: 'loader', privateKey, warehouse: 'wh' })
      .expect(200);
    await a.http
      .put('/api/v1/secrets/pgvector')
      .send({ connectionString: 'postgres://vec:S3cret-pg@db:5432/vectors' })
      .expect(200);
    await a.http
      .put('/api/v1/secrets/qdrant')
      .send({ url: 'https://admin:S3cret-qd@qdrant.internal:6333', apiKey: 'qd-key' })
      .expect(200);

    const snowflake = await a.http.get('/api/v1/secrets/snowflake').expect(200);
    expect(snowflake.body.fields).toEqual({
      account: 'xy12345',
      user: 'loader',
      privateKey: MASK,
      warehouse: 'wh',
    });
    const pgvector = await a.http.get('/api/v1/secrets/pgvector').expect(200);
    expect(pgvector.body.fields).toEqual({ connectionString: `postgres://vec:${MASK}@db:5432/vectors` });
    const qdrant = await a.http.get('/api/v1/secrets/qdrant').expect(200);
    expect(qdrant.body.fields).toEqual({ url: `https://admin:${MASK}@qdrant.internal:6333`, apiKey: MASK });
    const answers = JSON.stringify([snowflake.body, pgvector.body, qdrant.body]);
    expect(answers).not.toMatch(/MIIE|S3cret|qd-key/);
  });

  it('keeps fields named like Object.prototype members', async () => {
    const body = '{"__proto__":"p-value","constructor":"c-value","password":"hidden-pw"}';
    await a.http
      .put('/api/v1/secrets/odd-fields')
      .set('content-type', 'application/json')
      .send(body)
      .expect(200);
    const got = await a.http.get('/api/v1/secrets/odd-fields').expect(200);
    expect(Object.entries(got.body.fields).sort()).toEqual([
      ['__proto__', 'p-value'],
      ['constructor', 'c-value'],
      ['password', MASK],
    ]);
  });

  it('accepts names with slashes when URL-encoded', async () => {
    await a.http.put('/api/v1/secrets/team%2Fwarehouse').send({ user: 'u' }).expect(200);
    expect((await a.http.get('/api/v1/secrets/team%2Fwarehouse').expect(200)).body.name).toBe(
      'team/warehouse',
    );
    await a.http.delete('/api/v1/secrets/team%2Fwarehouse').expect(200);
  });

  it('scopes secrets to the environment', async () => {
    await a.http.put('/api/v1/secrets/shared-name').send({ owner: 'a' }).expect(200);
    await b.http.get('/api/v1/secrets/shared-name').expect(404);
    expect((await b.http.get('/api/v1/secrets').expect(200)).body).not.toContain('shared-name');

    await b.http.put('/api/v1/secrets/shared-name').send({ owner: 'b' }).expect(200);
    expect((await a.http.get('/api/v1/secrets/shared-name').expect(200)).body.fields.owner).toBe('a');
    expect((await b.http.get('/api/v1/secrets/shared-name').expect(200)).body.fields.owner).toBe('b');

    await b.http.delete('/api/v1/secrets/shared-name').expect(200);
    expect((await a.http.get('/api/v1/secrets/shared-name').expect(200)).body.fields.owner).toBe('a');
  });

  it('encrypts at rest with a fresh nonce per write', async () => {
    const plaintext = 'plain-text-never-stored-4711';
    await a.http
      .put('/api/v1/secrets/at-rest')
      .send({ password: plaintext, user: 'visible-user-name' })
      .expect(200);
    const first = await rawRow('at-rest');
    await a.http
      .put('/api/v1/secrets/at-rest')
      .send({ password: plaintext, user: 'visible-user-name' })
      .expect(200);
    const second = await rawRow('at-rest');

    for (const row of [first, second]) {
      const everything = Buffer.concat(
        Object.values(row).map((v) =>
          Buffer.from(String(v instanceof Buffer ? v.toString('latin1') : v), 'latin1'),
        ),
      );
      expect(everything.includes(Buffer.from(plaintext))).toBe(false);
      expect(everything.includes(Buffer.from('visible-user-name'))).toBe(false);
      expect(row.nonce).toHaveLength(12);
      expect(row.auth_tag).toHaveLength(16);
    }
    expect(Buffer.compare(first.nonce, second.nonce)).not.toBe(0);
    expect(Buffer.compare(first.ciphertext, second.ciphertext)).not.toBe(0);
  });

  it('refuses a ciphertext moved onto another secret (bound to environment and name)', async () => {
    await a.http.put('/api/v1/secrets/original').send({ token: 'moved-token-value' }).expect(200);
    await a.http.put('/api/v1/secrets/victim').send({ token: 'x' }).expect(200);
    await pg.query(
      `UPDATE tapyard.secrets v SET nonce = o.nonce, ciphertext = o.ciphertext, auth_tag = o.auth_tag
       FROM tapyard.secrets o WHERE o.environment = $1 AND o.name = 'original' AND v.environment = $1 AND v.name = 'victim'`,
      [a.config.environment],
    );
    const res = await a.http.get('/api/v1/secrets/victim').expect(500);
    expect(res.body.statusCode).toBe(500);
    expect(res.body.message).toMatch(/internal error/);
    expect(JSON.stringify(res.body)).not.toMatch(/moved-token-value|at |\.ts:|postgres:\/\//);
    // The other secrets of the environment stay readable.
    await a.http.get('/api/v1/secrets/original').expect(200);
  });

  it('rejects bad bodies and names with a 400 that names the problem', async () => {
    const notObject = await a.http.put('/api/v1/secrets/bad').send([1, 2]).expect(400);
    expect(notObject.body.message).toMatch(/JSON object/);

    const notString = await a.http
      .put('/api/v1/secrets/bad')
      .send({ port: 5432, password: 'pw-not-echoed' })
      .expect(400);
    expect(notString.body.message).toBe("secret field 'port' must be a string, got number");
    expect(notString.body.details).toEqual([{ field: 'port', problem: 'must be a string, got number' }]);
    expect(JSON.stringify(notString.body)).not.toContain('pw-not-echoed');

    const badName = await a.http.put('/api/v1/secrets/..%2Fetc').send({ a: 'b' }).expect(400);
    expect(badName.body.message).toMatch(/secret name/);

    const empty = await a.http.put('/api/v1/secrets/bad').send({}).expect(400);
    expect(empty.body.message).toMatch(/at least one field/);
    await a.http.get('/api/v1/secrets/bad').expect(404);
  });

  it('never writes secret values to the log', async () => {
    const value = 'log-leak-canary-31337';
    await a.http.put('/api/v1/secrets/canary').send({ password: value, note: value }).expect(200);
    await a.http.get('/api/v1/secrets/canary').expect(200);
    await a.http.put('/api/v1/secrets/canary').send({ password: value, n: 1 }).expect(400);
    await a.http
      .put('/api/v1/secrets/canary')
      .set('content-type', 'application/json')
      .send(`{"password":"${value}"`)
      .expect(400);
    expect(a.logs.lines.length).toBeGreaterThan(0);
    expect(a.logs.text).not.toContain(value);
  });

  async function rawRow(
    name: string,
  ): Promise<Record<string, Buffer> & { nonce: Buffer; ciphertext: Buffer; auth_tag: Buffer }> {
    const res = await pg.query('SELECT * FROM tapyard.secrets WHERE environment = $1 AND name = $2', [
      a.config.environment,
      name,
    ]);
    expect(res.rows).toHaveLength(1);
    return res.rows[0];
  }
});
