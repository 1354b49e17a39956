import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TestApi, startApi } from './support/apps';
import { TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { csvPipeline, upload } from './support/ingest';
import { Relay, cuttableProxy } from './support/net';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The staging object store goes away while an upload's body is still arriving (its first part was
 * already stored). The upload's part writes fail; the client must still read a 503 naming the object
 * store, not hang until its own timeout or lose the answer to a reset, and the API keeps serving.
 */
describe('the staging object store failing in the middle of an upload', () => {
  const env = uniqueEnvironment('upoutage');
  const table = `upoutage_${env.replace(/[^a-z0-9]/g, '_')}`;
  let relay: Relay;
  let api: TestApi;
  let port: number;

  beforeAll(async () => {
    relay = await cuttableProxy(Number(new URL(TEST_OBJECT_STORE.OBJECT_STORE_ENDPOINT).port));
    api = await startApi({
      TAPYARD_ENV: env,
      STAGING_OBJECT_STORE_ENDPOINT: `http://127.0.0.1:${relay.port}`,
    });
    const server = api.app.getHttpServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    await api.http
      .post('/api/v1/pipeline')
      .send(
        csvPipeline('outage', table, [
          ['id', 'int'],
          ['label', 'string'],
        ]),
      )
      .expect(200);
  });
  afterAll(async () => {
    await api.close();
    await relay.close();
  });

  const rows = (from: number, n: number) =>
    Array.from({ length: n }, (_, i) => `${from + i},label ${from + i}\n`).join('');

  it('answers 503 naming the object store once the body is in, and goes on serving', async () => {
    const boundary = 'outage-boundary';
    let sending: ReturnType<typeof httpRequest> | undefined;
    const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = (sending = httpRequest({
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/api/v1/pipeline/upload',
        // Chunked: the body is streamed (staged as it arrives), never received whole.
        headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      }));
      req.on('response', (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      void (async () => {
        req.write(
          `--${boundary}\r\nContent-Disposition: form-data; name="pipeline"\r\n\r\noutage\r\n` +
            `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="rows.csv"\r\n` +
            `Content-Type: text/csv\r\n\r\nid,label\n${rows(0, 5_000)}`,
        );
        // The first part is cut after 250 ms and stored through the relay.
        const stored = relay.sent() + 50_000;
        const until = Date.now() + 20_000;
        while (relay.sent() < stored && Date.now() < until) await sleep(50);
        relay.cut();
        // The next part's write fails while the client is still sending.
        for (let i = 1; i <= 6; i++) {
          req.write(rows(i * 5_000, 5_000));
          await sleep(150);
        }
        req.end(`\r\n--${boundary}--\r\n`);
      })().catch(reject);
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        // A stalled request would also hold the app's close open.
        sending?.destroy();
        reject(new Error('no answer within 30 s: the upload stalled after its part write failed'));
      }, 30_000);
    });
    const got = await Promise.race([answer, timeout]).finally(() => clearTimeout(timer));
    expect(got.status).toBe(503);
    expect((JSON.parse(got.body) as { message: string }).message).toMatch(/object store/);

    relay.restore();
    await api.http.get('/api/v1/pipelines').expect(200);
    // Larger than INLINE_UPLOAD_BYTES, so it is staged through the restored store.
    expect(await upload(api.http, 'outage', `id,label\n${rows(0, 5_000)}`, 'after.csv')).toMatch(
      /^[0-9a-f-]{36}$/,
    );
  }, 60_000);
});
