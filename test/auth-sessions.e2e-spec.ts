import { Client } from 'pg';
import request from 'supertest';
import { LoginClock } from '@tapyard/auth';
import { TAP_RUN_HEADER } from '@tapyard/egress';
import { TestApi, startApi } from './support/apps';
import { Login, auditLines, authFailures, login as loginAs } from './support/auth';
import { TEST_DATABASE_URL, uniqueEnvironment } from './support/env';
import { csvPipeline } from './support/ingest';

const ADMIN_PASSWORD = 'admin-password-for-tests-1';

/** Logs in from a given client address (X-Forwarded-For, TRUST_PROXY=loopback). */
const login = (api: TestApi, username: string, password: string, from = '10.0.0.1'): Promise<Login> =>
  loginAs(api.http, username, password, from);

describe('Login sessions and roles (USE_USER_AUTH=true, USE_API_KEYS=false)', () => {
  const env = uniqueEnvironment('sess');
  const flags = {
    TAPYARD_ENV: env,
    USE_USER_AUTH: 'true',
    TAPYARD_ADMIN_PASSWORD: ADMIN_PASSWORD,
    TRUST_PROXY: 'loopback',
    LOGIN_BACKOFF_AFTER: '3',
    LOGIN_MAX_FAILURES_PER_ADDRESS: '5',
  };
  let a: TestApi;
  let b: TestApi;
  let admin: Login;
  let pg: Client;

  beforeAll(async () => {
    a = await startApi(flags);
    b = await startApi(flags);
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    admin = await login(a, 'admin', ADMIN_PASSWORD);
    for (const [username, role] of [
      ['ed', 'editor'],
      ['vi', 'viewer'],
    ]) {
      await a.http
        .post('/api/v1/users')
        .set('cookie', admin.cookie)
        .set('x-csrf-token', admin.csrf)
        .send({ username, password: `${username}-password-123`, role })
        .expect(201);
    }
  });

  afterAll(async () => {
    await pg.end();
    await a.close();
    await b.close();
  });

  it('refuses to start without TAPYARD_ADMIN_PASSWORD when no admin exists', async () => {
    await expect(
      startApi({ TAPYARD_ENV: uniqueEnvironment('noadmin'), USE_USER_AUTH: 'true' }),
    ).rejects.toThrow(/TAPYARD_ADMIN_PASSWORD/);
  });

  it('sets an HttpOnly, SameSite=Lax session cookie (Secure behind TLS) and stores a scrypt hash', async () => {
    const res = await a.http
      .post('/api/v1/auth/login')
      .send({ username: 'admin', password: ADMIN_PASSWORD })
      .expect(200);
    expect(res.body).toEqual({ username: 'admin', role: 'admin', csrfToken: expect.any(String) });
    const cookies = res.headers['set-cookie'] as unknown as string[];
    const session = cookies.find((c) => c.startsWith('tapyard_session=')) as string;
    expect(session).toMatch(/; HttpOnly/);
    expect(session).toMatch(/; SameSite=Lax/);
    expect(session).not.toMatch(/; Secure/);
    expect(cookies.find((c) => c.startsWith('tapyard_csrf='))).not.toMatch(/HttpOnly/);
    const tls = await a.http
      .post('/api/v1/auth/login')
      .set('x-forwarded-proto', 'https')
      .send({ username: 'admin', password: ADMIN_PASSWORD })
      .expect(200);
    expect((tls.headers['set-cookie'] as unknown as string[])[0]).toMatch(/; Secure/);

    const row = await pg.query(
      'SELECT password_hash FROM tapyard.users WHERE environment = $1 AND username = $2',
      [env, 'admin'],
    );
    expect(row.rows[0].password_hash).toMatch(/^scrypt\$32768\$8\$1\$/);
    expect(row.rows[0].password_hash).not.toContain(ADMIN_PASSWORD);
  });

  it('programmatic clients without a cookie stay anonymous (spec table); a bad cookie is 401', async () => {
    await a.http.get('/api/v1/pipelines').expect(200);
    const res = await a.http.get('/api/v1/pipelines').set('cookie', 'tapyard_session=forged').expect(401);
    expect(res.body.message).toMatch(/log in again/);
    expect(authFailures(a.logs)).toContainEqual(expect.objectContaining({ reason: 'unknown session' }));
  });

  it('a session works on every API instance and reports who it is', async () => {
    const me = await b.http.get('/api/v1/auth/me').set('cookie', admin.cookie).expect(200);
    expect(me.body).toEqual({
      identity: 'session:admin',
      kind: 'session',
      username: 'admin',
      role: 'admin',
      capabilities: ['*:*'],
      legacy: true,
      environment: env,
    });
  });

  it('cookie-authenticated writes need the CSRF token', async () => {
    const cfg = csvPipeline('csrf_check', 'csrf_check', [['id', 'int']]);
    const res = await a.http.post('/api/v1/pipeline').set('cookie', admin.cookie).send(cfg).expect(403);
    expect(res.body.message).toMatch(/x-csrf-token/);
    await a.http
      .post('/api/v1/pipeline')
      .set('cookie', admin.cookie)
      .set('x-csrf-token', `${admin.csrf}x`)
      .send(cfg)
      .expect(403);
    await a.http
      .post('/api/v1/pipeline')
      .set('cookie', admin.cookie)
      .set('x-csrf-token', admin.csrf)
      .send(cfg)
      .expect(200);
  });

  it('roles: viewer reads only; editor creates but administers nothing; audit lines name session:<user>', async () => {
    const vi = await login(a, 'vi', 'vi-password-123');
    const ed = await login(a, 'ed', 'ed-password-123');
    const write = (s: Login, name: string) =>
      a.http
        .post('/api/v1/pipeline')
        .set('cookie', s.cookie)
        .set('x-csrf-token', s.csrf)
        .send(csvPipeline(name, name, [['id', 'int']]));
    await a.http.get('/api/v1/pipelines').set('cookie', vi.cookie).expect(200);
    await write(vi, 'by_viewer').expect(403);
    await write(ed, 'by_editor').expect(200);
    await a.http.get('/api/v1/keys').set('cookie', ed.cookie).expect(403);
    await a.http
      .post('/api/v1/users')
      .set('cookie', ed.cookie)
      .set('x-csrf-token', ed.csrf)
      .send({ username: 'mallory', password: 'mallory-password', role: 'admin' })
      .expect(403);
    const lines = auditLines(a.logs);
    expect(lines).toContainEqual(
      expect.objectContaining({
        key: 'session:vi',
        required: 'pipeline:update',
        outcome: 'deny',
        legacy: false,
      }),
    );
    expect(lines).toContainEqual(
      expect.objectContaining({ key: 'session:ed', route: 'GET /api/v1/keys', outcome: 'deny' }),
    );
    expect(lines).toContainEqual(expect.objectContaining({ key: 'session:ed', outcome: 'grant' }));
  });

  it('logout ends the session everywhere; deleting a user ends theirs; the last admin stays', async () => {
    const s = await login(a, 'ed', 'ed-password-123', '10.0.0.2');
    await b.http.get('/api/v1/auth/me').set('cookie', s.cookie).expect(200);
    await a.http.post('/api/v1/auth/logout').set('cookie', s.cookie).set('x-csrf-token', s.csrf).expect(200);
    await b.http.get('/api/v1/auth/me').set('cookie', s.cookie).expect(401);
    // The cookie is gone: logging out again, without a token, just clears it.
    await a.http.post('/api/v1/auth/logout').set('cookie', s.cookie).expect(200);

    const v = await login(a, 'vi', 'vi-password-123', '10.0.0.2');
    await a.http
      .delete('/api/v1/users/vi')
      .set('cookie', admin.cookie)
      .set('x-csrf-token', admin.csrf)
      .expect(200);
    await a.http.get('/api/v1/pipelines').set('cookie', v.cookie).expect(401);

    const last = await a.http
      .delete('/api/v1/users/admin')
      .set('cookie', admin.cookie)
      .set('x-csrf-token', admin.csrf)
      .expect(409);
    expect(last.body.message).toMatch(/last admin/);
    const users = await a.http.get('/api/v1/users').set('cookie', admin.cookie).expect(200);
    expect(users.body.map((u: { username: string }) => u.username)).toEqual(['admin', 'ed']);
    expect(JSON.stringify(users.body)).not.toMatch(/scrypt|password/);
  });

  it('refuses a logout made with the cookie alone (cross-site form): 403, and the session stays', async () => {
    const s = await login(a, 'ed', 'ed-password-123', '10.0.0.3');
    const res = await a.http.post('/api/v1/auth/logout').set('cookie', s.cookie).expect(403);
    expect(res.body.message).toMatch(/x-csrf-token/);
    expect(res.headers['set-cookie']).toBeUndefined();
    await a.http
      .post('/api/v1/auth/logout')
      .set('cookie', s.cookie)
      .set('x-csrf-token', 'x'.repeat(s.csrf.length))
      .expect(403);
    await b.http.get('/api/v1/auth/me').set('cookie', s.cookie).expect(200);
    await a.http.post('/api/v1/auth/logout').set('cookie', s.cookie).set('x-csrf-token', s.csrf).expect(200);
    await b.http.get('/api/v1/auth/me').set('cookie', s.cookie).expect(401);
  });

  it('slows failed logins per username and address (429 + Retry-After, even with the right password)', async () => {
    for (let i = 0; i < 3; i++) {
      await a.http
        .post('/api/v1/auth/login')
        .set('x-forwarded-for', '10.1.0.1')
        .send({ username: 'ed', password: `wrong-${i}` })
        .expect(401);
    }
    const res = await b.http
      .post('/api/v1/auth/login')
      .set('x-forwarded-for', '10.1.0.1')
      .send({ username: 'ed', password: 'ed-password-123' })
      .expect(429);
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(res.body.message).toMatch(/too many failed logins/);
    // The account is not locked: from another address its owner logs in.
    await b.http
      .post('/api/v1/auth/login')
      .set('x-forwarded-for', '10.1.0.99')
      .send({ username: 'ed', password: 'ed-password-123' })
      .expect(200);
  });

  it('limits failed logins per address across usernames', async () => {
    for (let i = 0; i < 5; i++) {
      await a.http
        .post('/api/v1/auth/login')
        .set('x-forwarded-for', '10.2.0.1')
        .send({ username: `ghost${i}`, password: 'whatever-password' })
        .expect(401);
    }
    await a.http
      .post('/api/v1/auth/login')
      .set('x-forwarded-for', '10.2.0.1')
      .send({ username: 'admin', password: ADMIN_PASSWORD })
      .expect(429);
    await a.http
      .post('/api/v1/auth/login')
      .set('x-forwarded-for', '10.2.0.2')
      .send({ username: 'admin', password: ADMIN_PASSWORD })
      .expect(200);
  });

  it('limits one account across (forged) addresses; its owner, from a new address, waits a few seconds at most', async () => {
    await a.http
      .post('/api/v1/users')
      .set('cookie', admin.cookie)
      .set('x-csrf-token', admin.csrf)
      .send({ username: 'target', password: 'target-password-123', role: 'viewer' })
      .expect(201);
    // The limiter's clock stands still unless the test moves it: no sleeping, no race with real time.
    let now = Date.now();
    const clock = jest.spyOn(a.app.get(LoginClock), 'now').mockImplementation(() => now);
    const attempt = (from: string, password: string) =>
      a.http.post('/api/v1/auth/login').set('x-forwarded-for', from).send({ username: 'target', password });
    try {
      // Each guess from an address of its own (TRUST_PROXY=loopback believes X-Forwarded-For).
      const statuses: number[] = [];
      for (let i = 0; i < 30; i++) statuses.push((await attempt(`10.3.${i}.1`, `guess-${i}`)).status);
      expect(statuses).toEqual([...Array(5).fill(401), ...Array(25).fill(429)]);
      // The owner, from a new address, waits too (no oracle), but only the account's short back-off.
      const held = await attempt('10.3.200.1', 'target-password-123').expect(429);
      expect(Number(held.headers['retry-after'])).toBe(1);
      // Further guesses, each once the wait is over, double the wait up to its cap of 5 s, no more.
      const waits: number[] = [];
      for (let i = 0; i < 5; i++) {
        now += 5000;
        await attempt(`10.4.${i}.1`, `guess-again-${i}`).expect(401);
        waits.push(
          Number((await attempt(`10.5.${i}.1`, 'target-password-123').expect(429)).headers['retry-after']),
        );
      }
      expect(waits).toEqual([2, 4, 5, 5, 5]);
      now += 5000;
      await attempt('10.3.201.1', 'target-password-123').expect(200);
    } finally {
      clock.mockRestore();
    }
  });

  it('refuses a login marked as coming from a tap run (the egress proxy sets the mark)', async () => {
    const res = await a.http
      .post('/api/v1/auth/login')
      .set(TAP_RUN_HEADER, '1')
      .send({ username: 'admin', password: ADMIN_PASSWORD })
      .expect(403);
    expect(res.body.message).toMatch(/a tap run may not call POST \/api\/v1\/auth\/login/);
  });

  // Users type their password into the username field: a failed login's line must not hold it.
  it('logs a failed login with a keyed digest and the length of the username typed, never the text', async () => {
    const typed = 'Sup3r-Secret!';
    const attempt = (username: string, from: string) =>
      a.http
        .post('/api/v1/auth/login')
        .set('x-forwarded-for', from)
        .send({ username, password: 'Sup3r-Secret!-wrong' })
        .expect(401);
    await attempt(typed, '10.6.0.1');
    await attempt(typed, '10.6.0.2');
    await attempt('ed', '10.6.0.3');
    const failed = (from: string) =>
      a.logs.parsed().find((l) => l.msg === 'login failed' && l.address === from) as Record<string, unknown>;
    const [first, again, other] = ['10.6.0.1', '10.6.0.2', '10.6.0.3'].map(failed);
    expect(first).toMatchObject({
      usernameHash: expect.stringMatching(/^[0-9a-f]{12}$/),
      usernameLength: 13,
    });
    expect(first).not.toHaveProperty('username');
    // The same name gives the same digest (attempts correlate), another name another one.
    expect(again.usernameHash).toBe(first.usernameHash);
    expect(other).toMatchObject({ usernameLength: 2 });
    expect(other.usernameHash).not.toBe(first.usernameHash);
    expect(a.logs.text).not.toContain(typed);
  });

  it('never logs a password or a session id', async () => {
    const text = a.logs.text + b.logs.text;
    for (const secret of [
      ADMIN_PASSWORD,
      'ed-password-123',
      'vi-password-123',
      admin.cookie.split('=')[1],
      admin.csrf,
    ]) {
      expect(text).not.toContain(secret);
    }
  });
});

describe('Login is off without USE_USER_AUTH', () => {
  it('answers 404 naming the flag', async () => {
    const api = await startApi({ TAPYARD_ENV: uniqueEnvironment('nologin') });
    try {
      const res = await request(api.app.getHttpServer())
        .post('/api/v1/auth/login')
        .send({ username: 'admin', password: 'x' })
        .expect(404);
      expect(res.body.message).toMatch(/USE_USER_AUTH=false/);
    } finally {
      await api.close();
    }
  });
});
