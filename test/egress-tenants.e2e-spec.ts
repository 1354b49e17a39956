import { Server, createServer } from 'node:http';
import { TestApi, startApi } from './support/apps';
import { issueKey, newBootstrapKey } from './support/auth';
import { TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';

/**
 * A TAP_EGRESS_ALLOW entry scoped to one environment (`<environment>=host:port`) serves that
 * environment's work alone: in multi-tenant mode tenant A's private endpoint is reachable by A's tap
 * scripts and A's vector-store and Snowflake secrets, never by tenant B's, through the real paths
 * (the sandbox's egress proxy, the health probe of a secret's store, the save of a secret).
 */
describe("egress: an allow-list entry scoped to a tenant serves that tenant's work alone", () => {
  const operator = uniqueEnvironment('eop');
  const tenantA = uniqueEnvironment('eta');
  const tenantB = uniqueEnvironment('etb');
  const boot = newBootstrapKey();
  const keys: Record<string, string> = {};
  let api: TestApi;
  let server: Server;
  let port: number;
  let hits = 0;

  beforeAll(async () => {
    // A's private service: it answers anything, as Chroma's heartbeat would.
    server = createServer((_req, res) => {
      hits += 1;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ 'nanosecond heartbeat': 1 }));
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    port = (server.address() as { port: number }).port;
    api = await startApi({
      TAPYARD_ENV: operator,
      MULTI_TENANT: 'true',
      USE_API_KEYS: 'true',
      TAPYARD_BOOTSTRAP_API_KEY: boot,
      TAP_EGRESS_ALLOW: `${tenantA}=127.0.0.1:${port}`,
      ...TEST_OBJECT_STORE,
    });
    for (const tenant of [tenantA, tenantB]) {
      keys[tenant] = await issueKey(
        api.http,
        boot,
        `${tenant}-admin`,
        { template: 'full-access' },
        { tenant },
      );
    }
  }, 90_000);

  afterAll(async () => {
    await api?.close();
    await new Promise((ok) => server?.close(ok));
  });

  it("lets A's tap script reach the endpoint through the egress proxy, and refuses B's", async () => {
    const script = [
      'import urllib.request',
      'def fetch():',
      '    try:',
      `        with urllib.request.urlopen("http://127.0.0.1:${port}/", timeout=10) as r:`,
      '            return [{"status": r.status}]',
      '    except Exception as e:',
      '        return [{"status": getattr(e, "code", None) or type(e).__name__}]',
    ].join('\n');
    const run = (tenant: string) =>
      api.http
        .post('/api/v1/tap/test')
        .set('x-api-key', keys[tenant])
        .send({ name: 'reach', script })
        .expect(200);

    const b = await run(tenantB);
    expect(b.body.error).toBeNull();
    expect(b.body.isolation).toBe('bwrap');
    expect(b.body.records).toEqual([{ status: 403 }]);
    expect(b.body.logs).toContain(
      `[tapyard] egress: connection to 127.0.0.1:${port} refused by the egress policy: it is a loopback`,
    );
    expect(b.body.logs).toContain(`TAP_EGRESS_ALLOW=${tenantB}=127.0.0.1:${port}`);
    expect(hits).toBe(0);

    const a = await run(tenantA);
    expect(a.body.error).toBeNull();
    expect(a.body.records).toEqual([{ status: 200 }]);
    expect(hits).toBe(1);
  }, 120_000);

  it("probes A's vector store at the endpoint, and refuses B's store configured there", async () => {
    for (const tenant of [tenantA, tenantB]) {
      await api.http
        .put('/api/v1/secrets/chroma')
        .set('x-api-key', keys[tenant])
        .send({ url: `http://127.0.0.1:${port}` })
        .expect(200);
    }
    const before = hits;
    const b = await api.http.get('/api/v1/health/services').set('x-api-key', keys[tenantB]).expect(200);
    expect(b.body.chroma).toEqual({
      status: 'down',
      message: expect.stringContaining(
        `connection to 127.0.0.1:${port} refused by the egress policy: it is a loopback, private, ` +
          `link-local or reserved address (an operator may allow it for environment '${tenantB}' with ` +
          `TAP_EGRESS_ALLOW=${tenantB}=127.0.0.1:${port})`,
      ),
    });
    expect(hits).toBe(before);

    const a = await api.http.get('/api/v1/health/services').set('x-api-key', keys[tenantA]).expect(200);
    expect(a.body.chroma.message ?? '').not.toContain('egress policy');
    expect(hits).toBeGreaterThan(before);
  });

  it("saves A's Snowflake secret naming the endpoint, and refuses B's", async () => {
    const secret = {
      account: 'local',
      user: 'u',
      password: 'p',
      warehouse: 'w',
      database: 'd',
      schema: 's',
      accessUrl: `http://127.0.0.1:${port}`,
    };
    const b = await api.http
      .put('/api/v1/secrets/sf')
      .set('x-api-key', keys[tenantB])
      .send(secret)
      .expect(400);
    expect(b.body.code).toBe('destination.endpoint_refused');
    expect(b.body.message).toContain(`names 127.0.0.1:${port}, which is not a Snowflake account host`);
    expect(b.body.message).toContain(`TAP_EGRESS_ALLOW=${tenantB}=127.0.0.1:${port}`);
    await api.http.put('/api/v1/secrets/sf').set('x-api-key', keys[tenantA]).send(secret).expect(200);
  });
});
