import { createHash, randomBytes } from 'node:crypto';
import { SecretsService } from '@tapyard/secrets';
import { TestApi, startApi } from './support/apps';
import { Login, authFailures, issueKey, login, newBootstrapKey } from './support/auth';
import { uniqueEnvironment } from './support/env';

/**
 * Escalation through keys, users and the key map (security issue, section 4) and labels named like
 * members of Object.prototype (section 6). Every case here failed before its fix.
 */

const ADMIN_PASSWORD = 'security-admin-password';
const sha256 = (v: string): string => createHash('sha256').update(v, 'utf8').digest('hex');

/** The platform's own view of a secret (what a Postgres dump plus the master key would show). */
const stored = (api: TestApi, env: string, name: string) => api.app.get(SecretsService).readSystem(env, name);

/** An API with login sessions, client addresses taken from X-Forwarded-For. */
const loginApi = (label: string, extra: Record<string, string> = {}): Promise<TestApi> =>
  startApi({
    TAPYARD_ENV: uniqueEnvironment(label),
    USE_USER_AUTH: 'true',
    TAPYARD_ADMIN_PASSWORD: ADMIN_PASSWORD,
    TRUST_PROXY: 'loopback',
    ...extra,
  });

describe('grant only what you hold: keys and users', () => {
  const env = uniqueEnvironment('grant');
  const boot = newBootstrapKey();
  let api: TestApi;
  let admin: Login;
  const values: string[] = [];

  beforeAll(async () => {
    api = await startApi({
      TAPYARD_ENV: env,
      USE_API_KEYS: 'true',
      USE_USER_AUTH: 'true',
      TAPYARD_BOOTSTRAP_API_KEY: boot,
      TAPYARD_ADMIN_PASSWORD: ADMIN_PASSWORD,
    });
    admin = await login(api.http, 'admin', ADMIN_PASSWORD);
  });
  afterAll(() => api.close());

  const key = async (label: string, capabilities: string[]): Promise<string> => {
    const v = await issueKey(api.http, boot, label, { capabilities });
    values.push(v);
    return v;
  };
  const post = (as: string, path: string, body: object) =>
    api.http.post(`/api/v1${path}`).set('x-api-key', as).send(body);

  it('a key:create key issues only what it holds itself', async () => {
    const creator = await key('creator', ['key:create', 'pipeline:read:catalog=a', 'job:read']);
    for (const [body, lacks] of [
      [{ label: 'god', capabilities: ['*:*'] }, '*:*'],
      [{ label: 'god2', template: 'full-access' }, '*:*'],
      [{ label: 'ro', template: 'read-only' }, 'pipeline:read'],
      [{ label: 'wide', capabilities: ['pipeline:read'] }, 'pipeline:read'],
      [{ label: 'other', capabilities: ['pipeline:read:catalog=b'] }, 'pipeline:read:catalog=b'],
      [{ label: 'other-key', capabilities: ['pipeline:read:database=a'] }, 'pipeline:read:database=a'],
      [{ label: 'all-jobs', capabilities: ['job:*'] }, 'job:*'],
      [{ label: 'keys', capabilities: ['key:*'] }, 'key:*'],
    ] as const) {
      const res = await post(creator, '/keys', body).expect(403);
      expect(res.body.message).toContain(`lacks ${lacks}`);
      expect(res.body).not.toHaveProperty('key');
    }
    const ok = await post(creator, '/keys', {
      label: 'narrow',
      capabilities: ['pipeline:read:catalog=a', 'job:read', 'key:create'],
    }).expect(201);
    values.push(ok.body.key);
    const list = await api.http.get('/api/v1/keys').set('x-api-key', boot).expect(200);
    expect(list.body.map((k: { label: string }) => k.label)).not.toContain('god');
  });

  it('key:update cannot rotate a key holding more (bootstrap) nor see its value; revocation likewise', async () => {
    const rotator = await key('rotator', ['key:update', 'key:delete', 'job:read']);
    const res = await post(rotator, '/keys/bootstrap/rotate', {}).expect(403);
    expect(res.body.message).toMatch(/cannot rotate key 'bootstrap'.*lacks \*:\*/);
    expect(JSON.stringify(res.body)).not.toMatch(/tpy_/);
    const revoke = await api.http.delete('/api/v1/keys/bootstrap').set('x-api-key', rotator).expect(403);
    expect(revoke.body.message).toMatch(/cannot revoke key 'bootstrap'.*lacks \*:\*/);
    // bootstrap still works with its configured value
    await api.http.get('/api/v1/keys').set('x-api-key', boot).expect(200);
    // ...while a key it covers may be rotated and revoked
    const small = await key('small', ['job:read']);
    const rotated = await post(rotator, '/keys/small/rotate', {}).expect(200);
    values.push(rotated.body.key);
    await api.http.get('/api/v1/auth/me').set('x-api-key', small).expect(401);
    await api.http.delete('/api/v1/keys/small').set('x-api-key', rotator).expect(200);
  });

  it('user:create / user:update / user:delete only for roles the caller holds (admin = *:*)', async () => {
    const hr = await key('hr', [
      'user:create',
      'user:update',
      'user:delete',
      ...['pipeline', 'job', 'document', 'tap', 'config', 'metadata', 'platform', 'codegen', 'incident'].map(
        (r) => `${r}:read`,
      ),
      'search:vector',
      'search:query',
      // Viewers hold assistant:run (their assistant's tools are checked one by one).
      'assistant:run',
    ]);
    const made = await post(hr, '/users', {
      username: 'mallory',
      password: 'mallory-password-1',
      role: 'admin',
    }).expect(403);
    expect(made.body.message).toMatch(/role 'admin'.*lacks \*:\*/);
    const editor = await post(hr, '/users', {
      username: 'mallory',
      password: 'mallory-password-1',
      role: 'editor',
    }).expect(403);
    expect(editor.body.message).toMatch(/role 'editor'.*lacks pipeline:create/);
    await post(hr, '/users', { username: 'vic', password: 'vic-password-123', role: 'viewer' }).expect(201);
    // Promoting, or taking over an admin by changing its password, needs what the admin holds.
    const promote = await api.http
      .put('/api/v1/users/vic')
      .set('x-api-key', hr)
      .send({ role: 'admin' })
      .expect(403);
    expect(promote.body.message).toMatch(/lacks \*:\*/);
    const takeover = await api.http
      .put('/api/v1/users/admin')
      .set('x-api-key', hr)
      .send({ password: 'taken-over-password' })
      .expect(403);
    expect(takeover.body.message).toMatch(/user 'admin'.*lacks \*:\*/);
    await api.http.delete('/api/v1/users/admin').set('x-api-key', hr).expect(403);
    await login(api.http, 'admin', ADMIN_PASSWORD);
    await api.http
      .put('/api/v1/users/vic')
      .set('x-api-key', hr)
      .send({ password: 'vic-new-password-1' })
      .expect(200);
    await api.http.delete('/api/v1/users/vic').set('x-api-key', hr).expect(200);
    // An admin session holds *:* and may do all of it.
    await api.http
      .post('/api/v1/users')
      .set('cookie', admin.cookie)
      .set('x-csrf-token', admin.csrf)
      .send({ username: 'second', password: 'second-admin-pw', role: 'admin' })
      .expect(201);
  });

  it('never writes a key value into a log line', () => {
    for (const v of [boot, ...values]) expect(api.logs.text).not.toContain(v);
  });
});

describe('labels named like members of Object.prototype', () => {
  const env = uniqueEnvironment('proto');
  const boot = newBootstrapKey();
  let api: TestApi;

  beforeAll(async () => {
    api = await startApi({ TAPYARD_ENV: env, USE_API_KEYS: 'true', TAPYARD_BOOTSTRAP_API_KEY: boot });
  });
  afterAll(() => api.close());

  it('constructor: issue, list, authenticate, rotate and revoke like any label', async () => {
    const v = await issueKey(api.http, boot, 'constructor', { template: 'read-only' });
    const me = await api.http.get('/api/v1/auth/me').set('x-api-key', v).expect(200);
    expect(me.body.identity).toBe('constructor');
    const list = await api.http.get('/api/v1/keys').set('x-api-key', boot).expect(200);
    expect(list.body).toContainEqual(expect.objectContaining({ label: 'constructor', revoked: false }));
    const rotated = await api.http.post('/api/v1/keys/constructor/rotate').set('x-api-key', boot).expect(200);
    await api.http.get('/api/v1/auth/me').set('x-api-key', v).expect(401);
    await api.http.get('/api/v1/auth/me').set('x-api-key', rotated.body.key).expect(200);
    await api.http.delete('/api/v1/keys/constructor').set('x-api-key', boot).expect(200);
    await api.http.get('/api/v1/auth/me').set('x-api-key', rotated.body.key).expect(401);
    expect(authFailures(api.logs)).toContainEqual(
      expect.objectContaining({ reason: 'revoked key', label: 'constructor' }),
    );
    await api.http
      .post('/api/v1/keys')
      .set('x-api-key', boot)
      .send({ label: 'constructor', template: 'read-only' })
      .expect(409);
  });

  it('unknown names of Object.prototype answer like any unknown label', async () => {
    for (const label of ['valueof', 'constructor2', 'isprototypeof']) {
      await api.http.post(`/api/v1/keys/${label}/rotate`).set('x-api-key', boot).expect(404);
      await api.http.delete(`/api/v1/keys/${label}`).set('x-api-key', boot).expect(404);
    }
    for (const label of ['__proto__', 'toString', 'hasOwnProperty', 'valueOf']) {
      await api.http.post(`/api/v1/keys/${label}/rotate`).set('x-api-key', boot).expect(404);
      // Not a valid label (the same 400 as '_x' or 'toXtring'), and the key map is untouched.
      const res = await api.http
        .post('/api/v1/keys')
        .set('x-api-key', boot)
        .send({ label, template: 'read-only' })
        .expect(400);
      expect(res.body.message).toMatch(/invalid/);
    }
    const list = await api.http.get('/api/v1/keys').set('x-api-key', boot).expect(200);
    for (const k of list.body as { label: string }[]) expect(k.label).toMatch(/^[a-z][a-z0-9_-]*$/);
  });
});

describe('access state: the key map and the tenant mappings (multi-tenant)', () => {
  const operator = uniqueEnvironment('sop');
  const tenant = uniqueEnvironment('stn');
  const boot = newBootstrapKey();
  let api: TestApi;
  let ops: string;
  let tenantAdmin: string;
  const flags = {
    TAPYARD_ENV: operator,
    USE_API_KEYS: 'true',
    MULTI_TENANT: 'true',
    TAPYARD_BOOTSTRAP_API_KEY: boot,
  };

  beforeAll(async () => {
    api = await startApi(flags);
    ops = await issueKey(api.http, boot, 'ops', { template: 'ops' });
    tenantAdmin = await issueKey(api.http, boot, 't-admin', { template: 'full-access' }, { tenant });
    await api.http.put('/api/v1/secrets/warehouse').set('x-api-key', ops).send({ a: 'b' }).expect(200);
  });
  afterAll(() => api.close());

  const accessNames = (env: string) => [`${env}/api-keys`, 'api-key-mappings'];

  it('are not listed, read, written or deleted through /secrets, by any caller', async () => {
    for (const caller of [ops, boot]) {
      const list = await api.http.get('/api/v1/secrets').set('x-api-key', caller).expect(200);
      expect(list.body).toEqual(['warehouse']);
      for (const name of accessNames(operator)) {
        const path = `/api/v1/secrets/${encodeURIComponent(name)}`;
        const got = await api.http.get(path).set('x-api-key', caller).expect(404);
        expect(got.body.message).toBe(`secret '${name}' does not exist`);
        await api.http.delete(path).set('x-api-key', caller).expect(404);
        const put = await api.http
          .put(path)
          .set('x-api-key', caller)
          .send({ [`tpy_${randomBytes(20).toString('hex')}`]: tenant })
          .expect(400);
        expect(put.body.message).toMatch(/access state/);
      }
    }
    // A tenant naming the operator's key map, or its own, is refused the same way.
    for (const name of [...accessNames(operator), ...accessNames(tenant)]) {
      const path = `/api/v1/secrets/${encodeURIComponent(name)}`;
      await api.http.put(path).set('x-api-key', tenantAdmin).send({ x: 'y' }).expect(400);
      await api.http.get(path).set('x-api-key', tenantAdmin).expect(404);
    }
    // Nothing was changed behind the refusals.
    expect(Object.keys((await stored(api, operator, 'api-key-mappings')) ?? {})).toHaveLength(1);
  });

  it('key digests are HMACs under a server key: the map holds no SHA-256 of any value', async () => {
    const map = JSON.stringify(await stored(api, operator, `${operator}/api-keys`));
    const mappings = JSON.stringify(await stored(api, operator, 'api-key-mappings'));
    const tenantMap = JSON.stringify(await stored(api, tenant, `${tenant}/api-keys`));
    for (const v of [boot, ops, tenantAdmin]) {
      for (const text of [map, mappings, tenantMap]) {
        expect(text).not.toContain(sha256(v));
        expect(text).not.toContain(v);
      }
    }
  });

  it('a record or mapping with an old SHA-256 digest authenticates and is upgraded in place', async () => {
    const secrets = api.app.get(SecretsService);
    const legacy = `tpy_${randomBytes(32).toString('base64url')}`;
    const name = `${operator}/api-keys`;
    const fields = (await secrets.readSystem(operator, name)) ?? {};
    fields.legacy = JSON.stringify({
      label: 'legacy',
      hash: sha256(legacy),
      capabilities: ['job:read'],
      template: null,
      createdAt: '2026-01-01T00:00:00.000Z',
      revokedAt: null,
      retired: [],
    });
    await secrets.writeSystem(operator, name, fields);
    const me = await api.http.get('/api/v1/auth/me').set('x-api-key', legacy).expect(200);
    expect(me.body.identity).toBe('legacy');
    expect(JSON.stringify(await secrets.readSystem(operator, name))).not.toContain(sha256(legacy));
    await api.http.get('/api/v1/auth/me').set('x-api-key', legacy).expect(200);

    // Mappings written before: a SHA-256 field name, and a plain value written by hand.
    const bySha = `tpy_${randomBytes(32).toString('base64url')}`;
    const plain = `tpy_${randomBytes(32).toString('base64url')}`;
    const mappings = (await secrets.readSystem(operator, 'api-key-mappings')) ?? {};
    await secrets.writeSystem(operator, 'api-key-mappings', {
      ...mappings,
      [sha256(bySha)]: tenant,
      [plain]: tenant,
    });
    for (const v of [bySha, plain, bySha, plain]) {
      const res = await api.http.get('/api/v1/auth/me').set('x-api-key', v).expect(200);
      expect(res.body).toMatchObject({
        identity: expect.stringMatching(/^tenant-mapping:[0-9a-f]{16}$/),
        environment: tenant,
      });
    }
    const after = JSON.stringify(await secrets.readSystem(operator, 'api-key-mappings'));
    expect(after).not.toContain(sha256(bySha));
    expect(after).not.toContain(plain);
  });

  it("the bootstrap key's SHA-256 digest is upgraded at boot, before anyone uses it", async () => {
    const secrets = api.app.get(SecretsService);
    const name = `${operator}/api-keys`;
    const fields = (await secrets.readSystem(operator, name)) ?? {};
    const record = JSON.parse(fields.bootstrap) as { hash: string };
    await secrets.writeSystem(operator, name, {
      ...fields,
      bootstrap: JSON.stringify({ ...record, hash: sha256(boot) }),
    });
    const again = await startApi(flags);
    await again.close();
    const after = JSON.parse(((await secrets.readSystem(operator, name)) ?? {}).bootstrap) as {
      hash: string;
      retired: string[];
    };
    expect(after.hash).not.toBe(sha256(boot));
    expect(after.retired).toEqual([]); // upgraded in place, not rotated out
    await api.http.get('/api/v1/keys').set('x-api-key', boot).expect(200);
  });

  it('mappings that name the operator environment are ignored, with a warning', async () => {
    const secrets = api.app.get(SecretsService);
    const sneaky = `tpy_${randomBytes(32).toString('base64url')}`;
    const mappings = (await secrets.readSystem(operator, 'api-key-mappings')) ?? {};
    await secrets.writeSystem(operator, 'api-key-mappings', { ...mappings, [sneaky]: operator });
    await api.http.get('/api/v1/auth/me').set('x-api-key', sneaky).expect(401);
    expect(
      api.logs.parsed().filter((l) => l.level === 'warn' && /operator environment/.test(String(l.msg))),
    ).not.toHaveLength(0);
    // Issuing "into" the operator environment is refused too.
    const res = await api.http
      .post('/api/v1/keys')
      .set('x-api-key', boot)
      .send({ label: 'into-op', template: 'read-only', tenant: operator })
      .expect(400);
    expect(res.body.message).toMatch(/operator environment/);
    // Names that would share another environment's buckets (`_` becomes `-` there) are refused too.
    const lookalike = await api.http
      .post('/api/v1/keys')
      .set('x-api-key', boot)
      .send({ label: 'into-lookalike', template: 'read-only', tenant: operator.replace(/-/g, '_') })
      .expect(400);
    expect(lookalike.body.message).toContain(`would share the buckets of '${operator}'`);
  });

  it('tenants and non-full-access operator keys cannot issue into other environments', async () => {
    const cross = await api.http
      .post('/api/v1/keys')
      .set('x-api-key', tenantAdmin)
      .send({ label: 'cross', template: 'read-only', tenant: operator })
      .expect(400);
    expect(cross.body.message).toMatch(/operator environment/);
    const keyMaker = await issueKey(api.http, boot, 'key-maker', {
      capabilities: ['key:create', 'pipeline:read'],
    });
    const res = await api.http
      .post('/api/v1/keys')
      .set('x-api-key', keyMaker)
      .send({ label: 'reader', capabilities: ['pipeline:read'], tenant })
      .expect(403);
    expect(res.body.message).toMatch(/lacks \*:\*/);
  });

  it('the operator maps a hand-made value to a tenant through the keys API, and removes it', async () => {
    const value = `tpy_hand_${randomBytes(16).toString('hex')}`;
    await api.http.get('/api/v1/auth/me').set('x-api-key', value).expect(401);
    const mapper = await issueKey(api.http, boot, 'mapper', { capabilities: ['key:create', 'key:delete'] });
    const refused = await api.http
      .post('/api/v1/keys/tenant-mappings')
      .set('x-api-key', mapper)
      .send({ key: value, tenant })
      .expect(403);
    expect(refused.body.message).toMatch(/lacks \*:\*/);
    await api.http
      .post('/api/v1/keys/tenant-mappings')
      .set('x-api-key', boot)
      .send({ key: value, tenant: operator })
      .expect(400);
    await api.http
      .post('/api/v1/keys/tenant-mappings')
      .set('x-api-key', boot)
      .send({ key: 'short', tenant })
      .expect(400);
    const ok = await api.http
      .post('/api/v1/keys/tenant-mappings')
      .set('x-api-key', boot)
      .send({ key: value, tenant })
      .expect(200);
    expect(JSON.stringify(ok.body)).not.toContain(value);
    const me = await api.http.get('/api/v1/auth/me').set('x-api-key', value).expect(200);
    expect(me.body).toMatchObject({
      identity: expect.stringMatching(/^tenant-mapping:[0-9a-f]{16}$/),
      environment: tenant,
      legacy: true,
    });
    await api.http
      .post('/api/v1/keys/tenant-mappings/remove')
      .set('x-api-key', boot)
      .send({ key: value })
      .expect(200);
    await api.http.get('/api/v1/auth/me').set('x-api-key', value).expect(401);
    expect(api.logs.text).not.toContain(value);
  });
});

describe('login sessions end on password change, role change and deletion', () => {
  let api: TestApi;
  let admin: Login;

  beforeAll(async () => {
    api = await loginApi('ssess');
    admin = await login(api.http, 'admin', ADMIN_PASSWORD, '10.3.0.1');
  });
  afterAll(() => api.close());

  const asAdmin = <T extends { set(k: string, v: string): T }>(r: T): T =>
    r.set('cookie', admin.cookie).set('x-csrf-token', admin.csrf);
  const create = (username: string, role: string) =>
    asAdmin(api.http.post('/api/v1/users'))
      .send({ username, password: `${username}-password-1`, role })
      .expect(201);
  const alive = (s: Login) => api.http.get('/api/v1/auth/me').set('cookie', s.cookie);

  it('a password change ends every session of that user', async () => {
    await create('pat', 'editor');
    const s1 = await login(api.http, 'pat', 'pat-password-1', '10.3.0.2');
    const s2 = await login(api.http, 'pat', 'pat-password-1', '10.3.0.3');
    await alive(s1).expect(200);
    await asAdmin(api.http.put('/api/v1/users/pat')).send({ password: 'pat-new-password' }).expect(200);
    await alive(s1).expect(401);
    await alive(s2).expect(401);
    const s3 = await login(api.http, 'pat', 'pat-new-password', '10.3.0.2');
    await alive(s3).expect(200);
    await alive(admin).expect(200);
  });

  it('a role change ends every session of that user', async () => {
    await create('rob', 'viewer');
    const s = await login(api.http, 'rob', 'rob-password-1', '10.3.0.4');
    await asAdmin(api.http.put('/api/v1/users/rob')).send({ role: 'editor' }).expect(200);
    await alive(s).expect(401);
  });

  it("a deleted user's session does not come back when the name is created again", async () => {
    await create('del', 'viewer');
    const s = await login(api.http, 'del', 'del-password-1', '10.3.0.5');
    await alive(s).expect(200);
    await asAdmin(api.http.delete('/api/v1/users/del')).expect(200);
    await alive(s).expect(401);
    await create('del', 'admin');
    await alive(s).expect(401);
    const fresh = await login(api.http, 'del', 'del-password-1', '10.3.0.5');
    expect((await alive(fresh).expect(200)).body).toMatchObject({ role: 'admin' });
  });
});

describe('failed logins slow brute force without locking anyone out', () => {
  let api: TestApi;

  beforeAll(async () => {
    api = await loginApi('slock', {
      LOGIN_BACKOFF_AFTER: '3',
      LOGIN_BACKOFF_SECONDS: '1',
      LOGIN_MAX_FAILURES_PER_ADDRESS: '12',
      // The account's own back-off across addresses (test/auth-sessions) stays out of these counts.
      LOGIN_ACCOUNT_BACKOFF_AFTER: '50',
    });
  });
  afterAll(() => api.close());

  const attempt = (from: string, username: string, password: string) =>
    api.http.post('/api/v1/auth/login').set('x-forwarded-for', from).send({ username, password });
  const wait = (ms: number) => new Promise((done) => setTimeout(done, ms));

  it("an attacker's failures do not lock the owner out from the owner's address", async () => {
    for (let i = 0; i < 8; i++) await attempt('10.4.0.66', 'admin', `wrong-${i}`);
    await attempt('10.4.0.7', 'admin', ADMIN_PASSWORD).expect(200);
  });

  it('failures of one account from one address back off exponentially (429 + Retry-After)', async () => {
    const from = '10.4.0.9';
    for (let i = 0; i < 3; i++) await attempt(from, 'admin', `bad-${i}`).expect(401);
    const first = await attempt(from, 'admin', ADMIN_PASSWORD).expect(429);
    expect(first.headers['retry-after']).toBe('1');
    expect(first.body.message).toMatch(/too many failed logins/);
    await wait(1100);
    await attempt(from, 'admin', 'bad-3').expect(401);
    const second = await attempt(from, 'admin', 'bad-4').expect(429);
    expect(second.headers['retry-after']).toBe('2');
    await wait(2100);
    await attempt(from, 'admin', 'bad-5').expect(401);
    const third = await attempt(from, 'admin', 'bad-6').expect(429);
    expect(Number(third.headers['retry-after'])).toBeGreaterThanOrEqual(3);
    // Another account from the same address is not slowed by these.
    await attempt(from, 'nobody', 'whatever-password').expect(401);
  });

  it('many failures from one address across accounts stop that address only', async () => {
    for (let i = 0; i < 12; i++) await attempt('10.4.0.50', `ghost${i}`, 'whatever-password');
    await attempt('10.4.0.50', 'admin', ADMIN_PASSWORD).expect(429);
    await attempt('10.4.0.51', 'admin', ADMIN_PASSWORD).expect(200);
  });
});
