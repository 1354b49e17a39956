import { createServer, Server } from 'node:http';
import { TestApi, startApi } from './support/apps';
import { blackhole, closedPort } from './support/net';

const CORE = ['postgres', 'redis', 'mongodb', 'minio', 'activemq', 'kafka'];
const VECTOR = ['qdrant', 'weaviate', 'milvus', 'chroma', 'pgvector'];

describe('platform endpoints (real Postgres and Redis)', () => {
  describe('with only the required peers configured', () => {
    let api: TestApi;
    beforeAll(async () => {
      api = await startApi({
        POSTGRES_DATABASE: 'warehouse_db',
        MONGODB_DATABASE: 'docs_db',
        HOSTED: 'true',
        OBJECT_STORE_ENDPOINT: undefined,
      });
    });
    afterAll(() => api.close());

    it('GET /version reports the version info object', async () => {
      const res = await api.http.get('/api/v1/version').expect(200);
      expect(res.body).toEqual({
        version: expect.stringMatching(/^\d+\.\d+\.\d+/),
        environment: api.config.environment,
        multiTenant: 'false',
        hosted: 'true',
        useUserAuth: 'false',
        useApiKeys: 'false',
        postgresDatabase: 'warehouse_db',
        mongodbDatabase: 'docs_db',
      });
    });

    it('GET /health/services lists every service; unconfigured ones carry no message', async () => {
      const res = await api.http.get('/api/v1/health/services').expect(200);
      expect(Object.keys(res.body).sort()).toEqual([...CORE, ...VECTOR, 'sandbox', 'ai'].sort());
      expect(res.body.sandbox).toEqual({
        status: 'up',
        message: expect.stringMatching(
          /^bwrap: own namespaces and a private network.*; each run has (a uid|a user namespace)/,
        ),
      });
      expect(res.body.postgres).toEqual({ status: 'up' });
      expect(res.body.redis).toEqual({ status: 'up' });
      for (const name of ['mongodb', 'minio', 'activemq', 'kafka', ...VECTOR]) {
        expect(res.body[name]).toEqual({ status: 'not_configured' });
      }
    });

    it('GET /destinations/available lists postgres when it answers, warehouses with complete credentials', async () => {
      expect((await api.http.get('/api/v1/destinations/available').expect(200)).body).toEqual(['postgres']);

      await api.http
        .put('/api/v1/secrets/sf-partial')
        .send({ account: 'acme', user: 'loader', password: 'pw', warehouse: 'wh' })
        .expect(200);
      expect((await api.http.get('/api/v1/destinations/available').expect(200)).body).toEqual(['postgres']);

      await api.http
        .put('/api/v1/secrets/sf')
        .send({
          account: 'acme',
          user: 'loader',
          password: 'pw',
          warehouse: 'wh',
          database: 'db',
          schema: 'public',
        })
        .expect(200);
      await api.http
        .put('/api/v1/secrets/dbx')
        .send({ host: 'dbc.example', token: 'dapi', warehouseId: 'w1', catalog: 'main' })
        .expect(200);
      // `username` is not Snowflake's field (the addendum says `user`), and Databricks needs its schema.
      expect((await api.http.get('/api/v1/destinations/available').expect(200)).body).toEqual([
        'postgres',
        'snowflake',
      ]);
      await api.http
        .put('/api/v1/secrets/dbx')
        .send({ host: 'dbc.example', token: 'dapi', warehouseId: 'w1', catalog: 'main', schema: 'sales' })
        .expect(200);
      expect((await api.http.get('/api/v1/destinations/available').expect(200)).body).toEqual([
        'postgres',
        'snowflake',
        'databricks',
      ]);
    });

    it('GET /vector-stores/available is empty when none is configured', async () => {
      expect((await api.http.get('/api/v1/vector-stores/available').expect(200)).body).toEqual([]);
    });
  });

  describe('with peers that are down', () => {
    let api: TestApi;
    let hang: { port: number; close(): Promise<void> };
    let readyz: Server;
    let readyzPort: number;

    beforeAll(async () => {
      const closed = await closedPort();
      hang = await blackhole();
      // A loopback double of one vector store's readiness route, only to exercise the "up" path.
      readyz = createServer((req, res) => {
        res.statusCode = req.url === '/api/v2/heartbeat' ? 200 : 404;
        res.end('{"nanosecond heartbeat": 1}');
      });
      await new Promise<void>((r) => readyz.listen(0, '127.0.0.1', r));
      readyzPort = (readyz.address() as { port: number }).port;
      api = await startApi({
        MONGODB_URI: `mongodb://127.0.0.1:${closed}/x`,
        OBJECT_STORE_ENDPOINT: `http://127.0.0.1:${closed}`,
        OBJECT_STORE_ACCESS_KEY: 'minio-access',
        OBJECT_STORE_SECRET_KEY: 'minio-secret-value',
        KAFKA_BROKERS: `127.0.0.1:${hang.port}`,
        ACTIVEMQ_URL: `stomp://127.0.0.1:${hang.port}`,
        ACTIVEMQ_PASSWORD: 'amq-secret-value',
        // Loopback stand-ins are private addresses: the operator's allow-list lets the probes reach them.
        TAP_EGRESS_ALLOW: [closed, hang.port, readyzPort].map((p) => `127.0.0.1:${p}`).join(','),
      });
      await api.http
        .put('/api/v1/secrets/qdrant')
        .send({ url: `http://127.0.0.1:${closed}`, apiKey: 'qk' })
        .expect(200);
      await api.http
        .put('/api/v1/secrets/weaviate')
        .send({ url: `http://127.0.0.1:${hang.port}` })
        .expect(200);
      await api.http
        .put('/api/v1/secrets/chroma')
        .send({ url: `http://127.0.0.1:${readyzPort}` })
        .expect(200);
      await api.http
        .put('/api/v1/secrets/pgvector')
        .send({ connectionString: `postgres://u:pgv-secret-pw@127.0.0.1:${closed}/db` })
        .expect(200);
    });

    afterAll(async () => {
      await api.close();
      await hang.close();
      await new Promise((r) => readyz.close(r));
    });

    it('answers within ~2.5 s, each down peer with its error and no credentials', async () => {
      // Warm-up: the first probe loads driver modules lazily, which is slow under Jest's module registry.
      await api.http.get('/api/v1/health/services').expect(200);
      const started = Date.now();
      const res = await api.http.get('/api/v1/health/services').expect(200);
      const elapsed = Date.now() - started;
      expect(elapsed).toBeLessThan(3000); // 2 s probes + slack for a loaded 2-core CI machine

      expect(res.body.postgres).toEqual({ status: 'up' });
      expect(res.body.mongodb.status).toBe('down');
      expect(res.body.mongodb.message).toMatch(/ECONNREFUSED|connect/i);
      expect(res.body.minio.status).toBe('down');
      expect(res.body.minio.message).toMatch(/ECONNREFUSED|connect/i);
      expect(res.body.kafka).toEqual({ status: 'down', message: 'no answer within 2000 ms' });
      expect(res.body.activemq).toEqual({ status: 'down', message: 'no answer within 2000 ms' });
      expect(res.body.qdrant.status).toBe('down');
      expect(res.body.weaviate).toEqual({ status: 'down', message: 'no answer within 2000 ms' });
      expect(res.body.chroma).toEqual({ status: 'up' });
      expect(res.body.pgvector.status).toBe('down');
      expect(res.body.milvus).toEqual({ status: 'not_configured' });
      expect(JSON.stringify(res.body)).not.toMatch(/pgv-secret-pw|minio-secret-value|amq-secret-value/);
    });

    it('leaves unreachable destinations and vector stores out of the available lists', async () => {
      expect((await api.http.get('/api/v1/destinations/available').expect(200)).body).toEqual(['postgres']);
      expect((await api.http.get('/api/v1/vector-stores/available').expect(200)).body).toEqual(['chroma']);
    });
  });

  describe('vector-store addresses from secrets pass the egress policy', () => {
    let api: TestApi;
    let redirecting: Server;
    let target: Server;
    let targetHits = 0;

    beforeAll(async () => {
      target = createServer((_req, res) => {
        targetHits += 1;
        res.end('ok');
      });
      await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
      const targetPort = (target.address() as { port: number }).port;
      redirecting = createServer((_req, res) => {
        res.writeHead(302, { location: `http://127.0.0.1:${targetPort}/api/v2/heartbeat` });
        res.end();
      });
      await new Promise<void>((r) => redirecting.listen(0, '127.0.0.1', r));
      const redirectPort = (redirecting.address() as { port: number }).port;
      // Both are allowed: a redirect is never followed, wherever it points.
      api = await startApi({ TAP_EGRESS_ALLOW: `127.0.0.1:${redirectPort},127.0.0.1:${targetPort}` });
      await api.http
        .put('/api/v1/secrets/chroma')
        .send({ url: `http://127.0.0.1:${redirectPort}` })
        .expect(200);
      // The platform's own Redis and Postgres: a health check must not probe them for a caller.
      await api.http.put('/api/v1/secrets/qdrant').send({ url: 'http://127.0.0.1:6379' }).expect(200);
      await api.http.put('/api/v1/secrets/weaviate').send({ url: 'file:///etc/passwd' }).expect(200);
      await api.http
        .put('/api/v1/secrets/pgvector')
        .send({ connectionString: 'postgres://postgres@localhost:5432/postgres' })
        .expect(200);
      await api.http.put('/api/v1/secrets/milvus').send({ url: 'http://169.254.169.254' }).expect(200);
    });
    afterAll(async () => {
      await api.close();
      await new Promise((r) => redirecting.close(r));
      await new Promise((r) => target.close(r));
    });

    it('refuses private addresses, other schemes and redirects, naming why', async () => {
      const res = await api.http.get('/api/v1/health/services').expect(200);
      expect(res.body.qdrant).toEqual({
        status: 'down',
        message: expect.stringContaining('connection to 127.0.0.1:6379 refused by the egress policy'),
      });
      expect(res.body.pgvector).toEqual({
        status: 'down',
        message: expect.stringMatching(
          /connection to localhost:5432 refused by the egress policy: it resolves to/,
        ),
      });
      expect(res.body.milvus.message).toContain(
        // The port checked is the one the client would connect to: Milvus's 19530 when the URL names none.
        'connection to 169.254.169.254:19530 refused by the egress policy',
      );
      expect(res.body.weaviate).toEqual({
        status: 'down',
        message: "weaviate is not usable: secret 'weaviate' has a url that is not http or https",
      });
      // A redirect is never followed: the store is down, saying why.
      expect(res.body.chroma).toEqual({
        status: 'down',
        message: expect.stringMatching(
          /^chroma at http:\/\/127\.0\.0\.1:\d+ answered with a redirect \(HTTP 302\), which is not followed$/,
        ),
      });
      expect(targetHits).toBe(0);
      expect((await api.http.get('/api/v1/vector-stores/available').expect(200)).body).toEqual([]);
    });
  });
});
