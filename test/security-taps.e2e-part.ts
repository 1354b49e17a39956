import { Pool } from 'pg';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { issueKey, login, newBootstrapKey } from './support/auth';
import { TEST_DATABASE_URL, TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { closedPort } from './support/net';

/**
 * Security issue, sections 1, 2 and 5 for taps: what a script can reach, who may hand it a secret,
 * and which pipelines a tap may feed. API keys on, real sandbox, real Postgres, Redis and MinIO.
 */
describe('security: tap scripts, secrets and targets', () => {
  const env = uniqueEnvironment('sec-taps');
  const schema = `sec_${env.replace(/[^a-z0-9]/g, '_')}`.slice(0, 60);
  const admin = newBootstrapKey();
  let api: TestApi;
  let worker: TestWorker;
  let pg: Pool;
  let port: number;
  const keys: Record<string, string> = {};

  const as = (key: string) => ({
    post: (path: string, body: unknown) =>
      api.http
        .post(`/api/v1${path}`)
        .set('x-api-key', key)
        .send(body as object),
  });

  beforeAll(async () => {
    port = await closedPort();
    const flags = {
      TAPYARD_ENV: env,
      ...TEST_OBJECT_STORE,
      USE_API_KEYS: 'true',
      TAPYARD_BOOTSTRAP_API_KEY: admin,
      PORT: String(port),
      HOST: '127.0.0.1',
      // Successive runs of one tap here are not about the debounce (taps.e2e-spec.ts is).
      TAP_DEBOUNCE_MS: '0',
    };
    api = await startApi(flags);
    await api.app.listen(port, '127.0.0.1');
    worker = await startWorker(flags);
    pg = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
    await pg.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    for (const [name, catalog] of [
      ['a_orders', 'a'],
      ['b_orders', 'b'],
    ]) {
      await as(admin)
        .post('/pipeline', {
          name,
          catalog,
          source: {
            fileAttributes: { format: 'csv' },
            schemaProperties: { fields: [{ name: 'n', type: 'int' }] },
          },
          destination: { database: { schema, table: name } },
        })
        .expect(200);
    }
    await api.http
      .put('/api/v1/secrets/prod-db')
      .set('x-api-key', admin)
      .send({ password: 'hunter2-prod-password' })
      .expect(200);
    keys.runner = await issueKey(api.http, admin, 'runner', { capabilities: ['tap:run', 'tap:read'] });
    keys.author = await issueKey(api.http, admin, 'author', {
      capabilities: ['tap:run', 'tap:read', 'tap:update'],
    });
    keys.trusted = await issueKey(api.http, admin, 'trusted', {
      capabilities: ['tap:run', 'tap:read', 'tap:update', 'secret:use'],
    });
    keys.catalogA = await issueKey(api.http, admin, 'catalog-a', {
      capabilities: ['tap:*:catalog=a', 'pipeline:*:catalog=a', 'job:read:catalog=a'],
    });
  }, 90_000);

  afterAll(async () => {
    await pg.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pg.end();
    await worker.close();
    await api.close();
  });

  describe('1. a script reaches no host service, only the internet through the egress proxy', () => {
    it('cannot open Redis, PostgreSQL or the object store, directly or through the proxy', async () => {
      const script = [
        'import socket, urllib.request',
        'def tcp(port):',
        '    try:',
        '        socket.create_connection(("127.0.0.1", port), timeout=3).close()',
        '        return "connected"',
        '    except Exception as e:',
        '        return type(e).__name__',
        'def proxied(port):',
        '    try:',
        '        urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=5)',
        '        return "answered"',
        '    except Exception as e:',
        '        return type(e).__name__ + " " + str(getattr(e, "code", ""))',
        'def fetch():',
        '    return [{"service": p, "direct": tcp(p), "proxied": proxied(p)} for p in (6379, 5432, 9000)]',
      ].join('\n');
      const res = await as(keys.runner).post('/tap/test', { name: 'probe', script }).expect(200);
      expect(res.body.error).toBeNull();
      expect(res.body.isolation).toBe('bwrap');
      for (const row of res.body.records as { direct: string; proxied: string }[]) {
        expect(row.direct).toBe('ConnectionRefusedError');
        expect(row.proxied).toBe('HTTPError 403');
      }
      expect(res.body.logs).toContain(
        '[tapyard] egress: connection to 127.0.0.1:6379 refused by the egress policy',
      );
    });

    it('calls the platform through the proxy with a run key limited to the caller, revoked when the run ends', async () => {
      const script = [
        'import json, os, urllib.request',
        'BASE = "http://%s:%s/api/v1" % (os.environ["SERVICE_PLATFORM_HOST"], os.environ["SERVICE_PLATFORM_PORT"])',
        'def call(method, path, body=None):',
        '    req = urllib.request.Request(BASE + path, method=method, data=body,',
        '        headers={"x-api-key": os.environ["SERVICE_PLATFORM_API_KEY"], "content-type": "application/json"})',
        '    try:',
        '        with urllib.request.urlopen(req, timeout=10) as r:',
        '            return [r.status, json.loads(r.read())]',
        '    except urllib.error.HTTPError as e:',
        '        return [e.code, None]',
        'def fetch():',
        '    return [{"key": os.environ["SERVICE_PLATFORM_API_KEY"],',
        '             "pipelines": call("GET", "/pipelines"),',
        '             "secret": call("PUT", "/secrets/stolen", b\'{"a":"b"}\'),',
        '             "keys": call("GET", "/keys")}]',
      ].join('\n');
      const res = await as(keys.catalogA)
        .post('/tap/test', { name: 'platform', catalog: 'a', script })
        .expect(200);
      expect(res.body.error).toBeNull();
      const [row] = res.body.records as {
        key: string;
        pipelines: [number, { name: string }[]];
        secret: [number];
        keys: [number];
      }[];
      // The caller reads catalog a only, and so does the script; it can never write or administer.
      expect(row.pipelines[0]).toBe(200);
      expect(row.pipelines[1].map((p) => p.name)).toEqual(['a_orders']);
      expect(row.secret[0]).toBe(403);
      expect(row.keys[0]).toBe(403);
      expect(row.key).toMatch(/^tpy_run_/);
      await api.http.get('/api/v1/pipelines').set('x-api-key', row.key).expect(401);
      // The platform's own credentials never reach the script.
      expect(JSON.stringify(res.body)).not.toContain(admin);
    });
  });

  describe('2. secrets go only to code vetted by a holder of secret:use', () => {
    const exfiltrate =
      'import os\ndef fetch():\n    return [{"p": " ".join(os.environ.get("password", ""))}]\n';

    it('refuses an inline test script or a save that names a secret without secret:use', async () => {
      const test = await as(keys.runner)
        .post('/tap/test', { name: 'steal', secretName: 'prod-db', script: exfiltrate })
        .expect(403);
      expect(test.body.message).toBe(
        "'runner' lacks the capability secret:use to give a secret to code it changes or runs",
      );
      await as(keys.author)
        .post('/tap', { name: 'steal', secretName: 'prod-db', script: exfiltrate })
        .expect(403);
      await as(keys.trusted)
        .post('/tap', {
          name: 'vetted',
          secretName: 'prod-db',
          script: 'def fetch():\n    return [{"ok": 1}]\n',
        })
        .expect(200);
    });

    it('runs a stored tap as it is with tap:run, but not with new code, a new secret or a foreign script', async () => {
      const asIs = await as(keys.runner).post('/tap/test', { name: 'vetted' }).expect(200);
      expect(asIs.body.records).toEqual([{ ok: 1 }]);
      await as(keys.runner).post('/tap/run', { name: 'vetted', mode: 'test' }).expect(200);
      await as(keys.runner).post('/tap/test', { name: 'vetted', script: exfiltrate }).expect(403);
      await as(keys.author).post('/tap', { name: 'vetted', script: exfiltrate }).expect(403);
      await as(keys.author)
        .post('/tap', { name: 'vetted', packages: ['six==1.16.0'] })
        .expect(403);
      // Fields that change no code stay open to tap:update.
      await as(keys.author).post('/tap', { name: 'vetted', description: 'reviewed' }).expect(200);

      const other = await as(keys.trusted).post('/tap', { name: 'other', script: exfiltrate }).expect(200);
      const foreign = await as(keys.runner)
        .post('/tap/test', { name: 'vetted', scriptPath: other.body.scriptPath })
        .expect(400);
      expect(foreign.body.message).toBe("scriptPath must be one of the scripts of tap 'vetted'");
    });
  });

  describe('5. a tap feeds only pipelines its author and its runner may upload to', () => {
    it("refuses a catalog's tap that targets another catalog's pipeline, as if it did not exist", async () => {
      const res = await as(keys.catalogA)
        .post('/tap', {
          name: 'a_tap',
          catalog: 'a',
          targetPipeline: 'b_orders',
          script: 'def fetch():\n    return []\n',
        })
        .expect(404);
      expect(res.body.message).toBe("pipeline 'b_orders' does not exist");
      await as(keys.catalogA)
        .post('/tap', {
          name: 'a_tap',
          catalog: 'a',
          targetPipeline: 'a_orders',
          script: 'def fetch():\n    return []\n',
        })
        .expect(200);
    });

    it('keeps the grant of whoever last changed the code, so a narrower author cannot borrow a wider target', async () => {
      const rows = 'def fetch():\n    return [{"n": 1}]\n';
      // Catalog a saves a tap for a pipeline that does not exist yet...
      await as(keys.catalogA)
        .post('/tap', { name: 'cross', catalog: 'a', targetPipeline: 'later_b', script: rows })
        .expect(200);
      // ...which appears later, in catalog b.
      await as(admin)
        .post('/pipeline', {
          name: 'later_b',
          catalog: 'b',
          source: {
            fileAttributes: { format: 'csv' },
            schemaProperties: { fields: [{ name: 'n', type: 'int' }] },
          },
          destination: { database: { schema, table: 'later_b' } },
        })
        .expect(200);
      // Even an admin's run acts within the tap's grant: catalog a's.
      const refused = await as(admin).post('/tap/run', { name: 'cross', mode: 'run' }).expect(400);
      expect(refused.body.message).toBe(
        "tap 'cross' may not load into pipeline 'later_b': whoever last changed the tap's code (or started " +
          'this run) lacks pipeline:upload on it',
      );
      // A catalog-a key cannot run it at all: the target is outside its scope.
      const hidden = await as(keys.catalogA).post('/tap/run', { name: 'cross', mode: 'run' }).expect(404);
      expect(hidden.body.message).toBe("pipeline 'later_b' does not exist");
      // Once someone allowed to load there vouches for the code, it runs.
      await as(admin)
        .post('/tap', { name: 'cross', script: rows + '# reviewed\n' })
        .expect(200);
      const ran = await as(admin).post('/tap/run', { name: 'cross', mode: 'run' }).expect(200);
      expect(ran.body).toMatchObject({ status: 'success', persisted: true });
    }, 60_000);

    it('lets catalog-scoped tap:read keys turn English into cron', async () => {
      const res = await as(keys.catalogA)
        .post('/tap/cron', { description: 'every weekday at 7am' })
        .expect(200);
      expect(res.body.cronExpression).toBe('0 0 7 ? * MON-FRI');
    });
  });

  describe('6. testing a tap lends it no rights beyond its own', () => {
    // Lists the pipelines the script's run key may read.
    const lister = [
      'import json, os, urllib.request',
      'BASE = "http://%s:%s/api/v1" % (os.environ["SERVICE_PLATFORM_HOST"], os.environ["SERVICE_PLATFORM_PORT"])',
      'def fetch():',
      '    req = urllib.request.Request(BASE + "/pipelines", headers={"x-api-key": os.environ["SERVICE_PLATFORM_API_KEY"]})',
      '    with urllib.request.urlopen(req, timeout=10) as r:',
      '        return [{"names": sorted(p["name"] for p in json.loads(r.read()))}]',
    ].join('\n');

    it("runs a stored tap with its grant narrowed to the tester, the tester's own code with the tester's rights", async () => {
      await as(keys.catalogA).post('/tap', { name: 'lister', catalog: 'a', script: lister }).expect(200);
      // Catalog a's code, tested by an admin: it reads what catalog a's key could, not what the admin can.
      const stored = await as(admin).post('/tap/test', { name: 'lister' }).expect(200);
      expect(stored.body.error).toBeNull();
      expect(stored.body.records).toEqual([{ names: ['a_orders'] }]);
      // The same text sent by the admin is the admin's own code: it acts with the admin's rights.
      const own = await as(admin).post('/tap/test', { name: 'lister', script: lister }).expect(200);
      expect(own.body.error).toBeNull();
      expect((own.body.records as { names: string[] }[])[0].names).toEqual(
        expect.arrayContaining(['a_orders', 'b_orders']),
      );
    }, 60_000);

    it("answers a test naming a pipeline outside the tester's scope as it answers a missing one", async () => {
      const probe = (target: string) =>
        as(keys.catalogA).post('/tap/test', {
          name: 'probe',
          catalog: 'a',
          tapType: 'document',
          targetPipeline: target,
          script: 'def fetch(state=None):\n    return []\n',
        });
      const missing = await probe('no_such_pipeline');
      const hidden = await probe('b_orders');
      expect(missing.status).toBe(400);
      expect(hidden.status).toBe(missing.status);
      expect(hidden.body.message).toBe(
        (missing.body.message as string).replace('no_such_pipeline', 'b_orders'),
      );
      expect(hidden.body.code).toBe(missing.body.code);
    });
  });
});

/**
 * Security issue, section 5 for logins: a tap script reaches the platform through the egress proxy,
 * from the API's own host. Its login attempts must never spend the budget of that address, which
 * the operator shares (here: the admin logs in over loopback too).
 */
describe('security: a tap run cannot reach the login route', () => {
  const env = uniqueEnvironment('sec-taplogin');
  const bootstrap = newBootstrapKey();
  const adminPassword = 'admin-password-for-tap-login-tests';
  let api: TestApi;

  beforeAll(async () => {
    const port = await closedPort();
    api = await startApi({
      TAPYARD_ENV: env,
      ...TEST_OBJECT_STORE,
      USE_API_KEYS: 'true',
      USE_USER_AUTH: 'true',
      TAPYARD_BOOTSTRAP_API_KEY: bootstrap,
      TAPYARD_ADMIN_PASSWORD: adminPassword,
      PORT: String(port),
      HOST: '127.0.0.1',
    });
    await api.app.listen(port, '127.0.0.1');
  }, 90_000);

  afterAll(() => api.close());

  it("refuses a tap:run-only key's script 30 guesses at the admin's password; the admin still logs in", async () => {
    const runner = await issueKey(api.http, bootstrap, 'runner', { capabilities: ['tap:run', 'tap:read'] });
    const script = [
      'import json, os, urllib.request, urllib.error',
      'BASE = "http://%s:%s/api/v1" % (os.environ["SERVICE_PLATFORM_HOST"], os.environ["SERVICE_PLATFORM_PORT"])',
      'def guess(i):',
      '    body = json.dumps({"username": "admin", "password": "wrong-guess-%d" % i}).encode()',
      '    req = urllib.request.Request(BASE + "/auth/login", method="POST", data=body,',
      '        headers={"content-type": "application/json", "x-forwarded-for": "10.9.9.%d" % i})',
      '    try:',
      '        with urllib.request.urlopen(req, timeout=10) as r:',
      '            return r.status',
      '    except urllib.error.HTTPError as e:',
      '        return e.code',
      'def fetch():',
      '    return [{"statuses": [guess(i) for i in range(30)]}]',
    ].join('\n');
    const res = await api.http
      .post('/api/v1/tap/test')
      .set('x-api-key', runner)
      .send({ name: 'guesser', script })
      .expect(200);
    expect(res.body.error).toBeNull();
    expect(res.body.isolation).toBe('bwrap');
    const [row] = res.body.records as { statuses: number[] }[];
    expect(row.statuses).toEqual(Array.from({ length: 30 }, () => 403));
    expect(res.body.logs).toContain('a tap run may not call POST /api/v1/auth/login on the platform');
    // Not one guess reached the API, so nothing counted against loopback or the account.
    expect(api.logs.parsed().filter((l) => l.msg === 'login failed')).toEqual([]);
    await login(api.http, 'admin', adminPassword);
  });
});
