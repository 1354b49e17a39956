import { TestApi, startApi } from './support/apps';
import { auditLines, issueKey, login, newBootstrapKey } from './support/auth';
import { uniqueEnvironment } from './support/env';
import { csvPipeline } from './support/ingest';
import { closedPort } from './support/net';

const ADMIN_PASSWORD = 'matrix-admin-password';

interface Mode {
  name: string;
  flags: Record<string, string>;
  keys: boolean;
  users: boolean;
  enforce: boolean;
}

const MODES: Mode[] = [
  { name: 'keys only', flags: { USE_API_KEYS: 'true' }, keys: true, users: false, enforce: true },
  { name: 'login only', flags: { USE_USER_AUTH: 'true' }, keys: false, users: true, enforce: true },
  {
    name: 'login and keys',
    flags: { USE_API_KEYS: 'true', USE_USER_AUTH: 'true' },
    keys: true,
    users: true,
    enforce: true,
  },
  {
    name: 'login and keys, log-only',
    flags: { USE_API_KEYS: 'true', USE_USER_AUTH: 'true', CAPABILITY_ENFORCEMENT: 'log-only' },
    keys: true,
    users: true,
    enforce: false,
  },
  {
    name: 'multi-tenant keys',
    flags: { USE_API_KEYS: 'true', MULTI_TENANT: 'true' },
    keys: true,
    users: false,
    enforce: true,
  },
];

/** The issue's test list, run in every mode where it applies. */
describe.each(MODES)('auth matrix: $name', (mode) => {
  const boot = newBootstrapKey();
  let api: TestApi;
  let admin: string; // a full-access key of the environment the checks run in
  let cookie = '';
  let csrf = '';

  const expectDenied = async (status: 403 | 404, res: { status: number }, key: string, route: string) => {
    if (mode.enforce) {
      expect(res.status).toBe(status);
      expect(auditLines(api.logs)).toContainEqual(expect.objectContaining({ key, route, outcome: 'deny' }));
    } else {
      expect(res.status).toBe(200);
      expect(auditLines(api.logs)).toContainEqual(
        expect.objectContaining({ key, route, outcome: 'would-deny' }),
      );
    }
  };

  beforeAll(async () => {
    api = await startApi({
      TAPYARD_ENV: uniqueEnvironment('mx'),
      TAPYARD_BOOTSTRAP_API_KEY: boot,
      TAPYARD_ADMIN_PASSWORD: ADMIN_PASSWORD,
      ...mode.flags,
    });
    admin = mode.flags.MULTI_TENANT
      ? await issueKey(
          api.http,
          boot,
          'tenant-admin',
          { template: 'full-access' },
          { tenant: uniqueEnvironment('mxt') },
        )
      : boot;
    if (mode.users) {
      ({ cookie, csrf } = await login(api.http, 'admin', ADMIN_PASSWORD));
    }
    const asAdmin = (r: ReturnType<typeof api.http.post>) =>
      mode.keys ? r.set('x-api-key', admin) : r.set('cookie', cookie).set('x-csrf-token', csrf);
    for (const [name, catalog] of [
      ['cat_a', 'a'],
      ['cat_b', 'b'],
    ]) {
      // The environment's default place: a tenant may load only into its own schema.
      await asAdmin(api.http.post('/api/v1/pipeline'))
        .send(
          csvPipeline(name, name, [['id', 'int']], { catalog, destination: { database: { table: name } } }),
        )
        .expect(200);
    }
    if (mode.users) {
      for (const [username, role] of [
        ['ed', 'editor'],
        ['vi', 'viewer'],
      ]) {
        await api.http
          .post('/api/v1/users')
          .set('cookie', cookie)
          .set('x-csrf-token', csrf)
          .send({ username, password: `${username}-matrix-password`, role })
          .expect(201);
      }
    }
  });
  afterAll(() => api.close());

  const keysIt = mode.keys ? it : it.skip;
  const usersIt = mode.users ? it : it.skip;

  keysIt('missing, unknown, rotated-out and revoked keys get 401', async () => {
    await api.http.get('/api/v1/pipelines').expect(401);
    await api.http.get('/api/v1/pipelines').set('x-api-key', 'tpy_unknown_value').expect(401);
    const old = await issueKey(api.http, admin, 'to-rotate', { template: 'read-only' });
    await api.http.post('/api/v1/keys/to-rotate/rotate').set('x-api-key', admin).expect(200);
    await api.http.get('/api/v1/pipelines').set('x-api-key', old).expect(401);
    const doomed = await issueKey(api.http, admin, 'to-revoke', { template: 'read-only' });
    await api.http.get('/api/v1/pipelines').set('x-api-key', doomed).expect(200);
    await api.http.delete('/api/v1/keys/to-revoke').set('x-api-key', admin).expect(200);
    const res = await api.http.get('/api/v1/pipelines').set('x-api-key', doomed).expect(401);
    expect(res.body).toMatchObject({ statusCode: 401, error: 'Unauthorized' });
    expect(JSON.stringify(res.body)).not.toContain(doomed);
  });

  keysIt('a read-only key on a write route: 403 (or grant + would-deny in log-only mode)', async () => {
    const ro = await issueKey(api.http, admin, 'ro', { template: 'read-only' });
    const res = await api.http.delete('/api/v1/pipeline/status').set('x-api-key', ro);
    await expectDenied(403, res, 'ro', 'DELETE /api/v1/pipeline/status');
  });

  keysIt('a catalog-scoped key on another catalog: 404 (or would-deny)', async () => {
    const scoped = await issueKey(api.http, admin, 'only-a', { capabilities: ['pipeline:read:catalog=a'] });
    await api.http.get('/api/v1/pipeline').query({ pipeline: 'cat_a' }).set('x-api-key', scoped).expect(200);
    const res = await api.http.get('/api/v1/pipeline').query({ pipeline: 'cat_b' }).set('x-api-key', scoped);
    await expectDenied(404, res, 'only-a', 'GET /api/v1/pipeline');
  });

  usersIt(
    'a viewer session on an editor route, an editor on an admin route: 403 (or would-deny)',
    async () => {
      const session = (username: string) => login(api.http, username, `${username}-matrix-password`);
      const vi = await session('vi');
      const ed = await session('ed');
      const viewerWrite = await api.http
        .post('/api/v1/pipeline')
        .set('cookie', vi.cookie)
        .set('x-csrf-token', vi.csrf)
        .send(csvPipeline('by_viewer', 'by_viewer', [['id', 'int']]));
      await expectDenied(403, viewerWrite, 'session:vi', 'POST /api/v1/pipeline');
      const editorAdmin = await api.http.get('/api/v1/keys').set('cookie', ed.cookie);
      await expectDenied(403, editorAdmin, 'session:ed', 'GET /api/v1/keys');
    },
  );
});

describe('API keys keep working when Redis is down', () => {
  it('reads the key map from Postgres and lets /health report Redis', async () => {
    const env = uniqueEnvironment('noredis');
    const boot = newBootstrapKey();
    const up = await startApi({ TAPYARD_ENV: env, USE_API_KEYS: 'true', TAPYARD_BOOTSTRAP_API_KEY: boot });
    const ops = await issueKey(up.http, boot, 'ops', { template: 'ops' });
    await up.close();
    const down = await startApi({
      TAPYARD_ENV: env,
      USE_API_KEYS: 'true',
      REDIS_URL: `redis://127.0.0.1:${await closedPort()}`,
      HEALTH_TIMEOUT_MS: '500',
    });
    try {
      const health = await down.http.get('/api/v1/health/services').set('x-api-key', ops).expect(200);
      expect(health.body.redis.status).toBe('down');
      await down.http.get('/api/v1/health/services').set('x-api-key', 'tpy_unknown').expect(401);
      // Changing keys needs Redis (to invalidate every instance's cache): refused, nothing written.
      const res = await down.http.post('/api/v1/keys/ops/rotate').set('x-api-key', boot).expect(503);
      expect(res.body.message).toMatch(/redis/);
      await down.http.get('/api/v1/health/services').set('x-api-key', ops).expect(200);
    } finally {
      await down.close();
    }
  });
});
