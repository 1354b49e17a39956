import { Server, ServerResponse, createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { ServiceUnavailableError } from '@tapyard/core';
import { EgressPolicy } from '@tapyard/egress';
import { QdrantStore } from './qdrant.store';

/** A loopback server answering every request with `answer`; counts what it was asked. */
async function serve(answer: (res: ServerResponse) => void): Promise<{
  server: Server;
  port: number;
  hits: string[];
  apiKeys: (string | undefined)[];
}> {
  const hits: string[] = [];
  const apiKeys: (string | undefined)[] = [];
  const server = createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    apiKeys.push(req.headers['api-key'] as string | undefined);
    answer(res);
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { server, port: (server.address() as AddressInfo).port, hits, apiKeys };
}

describe('QdrantStore over loopback HTTP', () => {
  let target: Awaited<ReturnType<typeof serve>>;
  let redirecting: Awaited<ReturnType<typeof serve>>;

  beforeAll(async () => {
    // What a followed redirect would reach: an answer the store would take for Qdrant's own.
    target = await serve((res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ result: { collections: [{ name: 'from-the-redirect' }] }, status: 'ok' }));
    });
    redirecting = await serve((res) => {
      res.writeHead(302, { location: `http://127.0.0.1:${target.port}/collections` });
      res.end();
    });
  });

  afterAll(async () => {
    for (const s of [target.server, redirecting.server]) await new Promise((done) => s.close(done));
  });

  it('never follows a redirect, even to an allowed address: the store is unavailable, saying why', async () => {
    for (const allowed of [[redirecting.port], [redirecting.port, target.port]]) {
      const policy = new EgressPolicy(allowed.map((port) => ({ host: '127.0.0.1', port })));
      const store = new QdrantStore({ url: `http://127.0.0.1:${redirecting.port}` }, policy);
      const err = await store.list().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ServiceUnavailableError);
      expect((err as Error).message).toMatch(/answered with a redirect \(HTTP 302\), which is not followed/);
      await expect(store.probe()).rejects.toThrow(/redirect/);
      await store.close();
    }
    expect(redirecting.hits).toContain('GET /collections');
    expect(target.hits).toEqual([]);
  });

  it('sends the api key and reads the answer of the address it was given', async () => {
    const policy = new EgressPolicy([{ host: '127.0.0.1', port: target.port }]);
    const store = new QdrantStore({ url: `http://127.0.0.1:${target.port}/`, apiKey: 'k' }, policy);
    expect(await store.list()).toEqual(['from-the-redirect']);
    expect(target.hits).toEqual(['GET /collections']);
    expect(target.apiKeys).toEqual(['k']);
    await store.close();
  });
});
