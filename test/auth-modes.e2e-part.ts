import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { runKeyCapabilities, runKeyMayCall } from '@tapyard/auth';
import { TestApi, startApi } from './support/apps';
import { auditLines, issueKey, login, newBootstrapKey } from './support/auth';
import { uniqueEnvironment } from './support/env';
import { csvPipeline } from './support/ingest';
import { assertEveryRouteDeclared, routeDeclarations } from '../apps/api/src/auth/route-audit';

describe('USE_USER_AUTH=false, USE_API_KEYS=false (default): fully anonymous', () => {
  let api: TestApi;
  beforeAll(async () => (api = await startApi({ TAPYARD_ENV: uniqueEnvironment('anon') })));
  afterAll(() => api.close());

  it('serves every route without credentials, reports the flags, and writes no audit lines', async () => {
    const v = await api.http.get('/api/v1/version').expect(200);
    expect(v.body).toMatchObject({ useUserAuth: 'false', useApiKeys: 'false', multiTenant: 'false' });
    await api.http.get('/api/v1/pipelines').expect(200);
    await api.http.put('/api/v1/secrets/s1').send({ a: 'b' }).expect(200);
    await api.http.get('/api/v1/pipelines').set('x-api-key', 'tpy_ignored').expect(200);
    expect(auditLines(api.logs)).toEqual([]);
  });
});

describe('CAPABILITY_ENFORCEMENT=log-only', () => {
  const boot = newBootstrapKey();
  let api: TestApi;
  let ro: string;
  let scoped: string;

  beforeAll(async () => {
    api = await startApi({
      TAPYARD_ENV: uniqueEnvironment('logonly'),
      USE_API_KEYS: 'true',
      TAPYARD_BOOTSTRAP_API_KEY: boot,
      CAPABILITY_ENFORCEMENT: 'log-only',
    });
    ro = await issueKey(api.http, boot, 'ro', { template: 'read-only' });
    scoped = await issueKey(api.http, boot, 'scoped', { capabilities: ['pipeline:read:catalog=a'] });
    for (const [name, catalog] of [
      ['in_a', 'a'],
      ['in_b', 'b'],
    ]) {
      await api.http
        .post('/api/v1/pipeline')
        .set('x-api-key', boot)
        .send(csvPipeline(name, name, [['id', 'int']], { catalog }))
        .expect(200);
    }
  });
  afterAll(() => api.close());

  it('lets denied calls through and logs would-deny instead of answering 403 or 404', async () => {
    await api.http.put('/api/v1/secrets/s2').set('x-api-key', ro).send({ a: 'b' }).expect(200);
    await api.http.get('/api/v1/pipeline').query({ pipeline: 'in_b' }).set('x-api-key', scoped).expect(200);
    const list = await api.http.get('/api/v1/pipelines').set('x-api-key', scoped).expect(200);
    expect(list.body.map((p: { name: string }) => p.name)).toEqual(['in_a', 'in_b']);
    const lines = auditLines(api.logs);
    expect(lines).toContainEqual(
      expect.objectContaining({ key: 'ro', route: 'PUT /api/v1/secrets/:name', outcome: 'would-deny' }),
    );
    expect(lines).toContainEqual(
      expect.objectContaining({ key: 'scoped', route: 'GET /api/v1/pipeline', outcome: 'would-deny' }),
    );
    expect(lines).toContainEqual(
      expect.objectContaining({ key: 'scoped', route: 'GET /api/v1/pipelines', outcome: 'would-deny' }),
    );
    expect(lines.some((l) => l.outcome === 'deny')).toBe(false);
  });

  it('still answers 401 for a missing or unknown key (authentication is not log-only)', async () => {
    await api.http.get('/api/v1/pipelines').expect(401);
    await api.http.get('/api/v1/pipelines').set('x-api-key', 'tpy_nope').expect(401);
  });
});

describe('USE_USER_AUTH=true, USE_API_KEYS=true: UI by login, programs by key', () => {
  const boot = newBootstrapKey();
  const password = 'both-modes-admin-password';
  let api: TestApi;

  beforeAll(async () => {
    api = await startApi({
      TAPYARD_ENV: uniqueEnvironment('both'),
      USE_API_KEYS: 'true',
      USE_USER_AUTH: 'true',
      TAPYARD_BOOTSTRAP_API_KEY: boot,
      TAPYARD_ADMIN_PASSWORD: password,
    });
  });
  afterAll(() => api.close());

  it('needs a key or a session; either works; a key wins over a cookie', async () => {
    await api.http.get('/api/v1/pipelines').expect(401);
    const ro = await issueKey(api.http, boot, 'ro', { template: 'read-only' });
    await api.http.get('/api/v1/pipelines').set('x-api-key', ro).expect(200);
    const { cookie } = await login(api.http, 'admin', password);
    await api.http.get('/api/v1/keys').set('cookie', cookie).expect(200);
    const me = await api.http.get('/api/v1/auth/me').set('cookie', cookie).set('x-api-key', ro).expect(200);
    expect(me.body).toMatchObject({ identity: 'ro', kind: 'key', legacy: false });
    await api.http.get('/api/v1/keys').set('cookie', cookie).set('x-api-key', ro).expect(403);
  });
});

describe('every route declares its capability', () => {
  it('walks the registered routes: none is unmapped', async () => {
    const api = await startApi({ TAPYARD_ENV: uniqueEnvironment('routes') });
    try {
      const routes = routeDeclarations(api.app);
      expect(routes.length).toBeGreaterThan(25);
      expect(routes.filter((r) => r.rule === undefined)).toEqual([]);
      expect(routes).toContainEqual(
        expect.objectContaining({
          method: 'DELETE',
          path: '/keys/:label',
          rule: expect.objectContaining({ capability: 'key:delete' }),
        }),
      );
    } finally {
      await api.close();
    }
  });

  it("lets tap runs through the egress proxy to exactly the routes a run key's actions reach", async () => {
    const api = await startApi({ TAPYARD_ENV: uniqueEnvironment('runroutes') });
    try {
      const routes = routeDeclarations(api.app);
      // The orchestrator's probes (outside /api/v1) are public but no platform route: runs have no use for them.
      const probes = ['/livez', '/readyz'];
      const wrong = routes.filter((r) => {
        const rule = r.rule as { kind: string; capability?: string };
        const runKeyRoute =
          rule.kind === 'capability'
            ? runKeyCapabilities([rule.capability ?? '']).length > 0
            : r.method === 'GET' &&
              // Public reads, and the one read open to any identity a run has use for.
              ((rule.kind === 'public' && !probes.includes(r.path)) || r.path === '/version');
        const outside = r.path === '/metrics' || probes.includes(r.path);
        const path = `${outside ? '' : '/api/v1'}${r.path.replace(/:[^/]+/g, 'x')}`;
        return runKeyMayCall(r.method, path) !== runKeyRoute;
      });
      expect(wrong.map((r) => `${r.method} ${r.path}`)).toEqual([]);
      // The list is not empty by accident, and login is never on it.
      expect(routes.filter((r) => runKeyMayCall(r.method, `/api/v1${r.path}`)).length).toBeGreaterThan(5);
      expect(runKeyMayCall('POST', '/api/v1/auth/login')).toBe(false);
    } finally {
      await api.close();
    }
  });

  it('the check catches a route without a declaration', async () => {
    @Controller('forgotten')
    class ForgottenController {
      @Get()
      get(): string {
        return 'open';
      }
    }
    @Module({ controllers: [ForgottenController] })
    class ForgottenModule {}
    const app = await NestFactory.create(ForgottenModule, { logger: false });
    try {
      expect(() => assertEveryRouteDeclared(app)).toThrow(/GET \/forgotten \(ForgottenController.get\)/);
    } finally {
      await app.close();
    }
  });
});
