import { IncomingMessage, Server, ServerResponse, createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { ServiceUnavailableError } from '@tapyard/core';
import { EgressPolicy } from '@tapyard/egress';
import { WeaviateStore } from './weaviate.store';

/** A loopback server answering every request with `answer`; records what it was asked. */
async function serve(answer: (req: IncomingMessage, res: ServerResponse) => void): Promise<{
  server: Server;
  port: number;
  hits: string[];
}> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    req.resume();
    answer(req, res);
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { server, port: (server.address() as AddressInfo).port, hits };
}

describe('WeaviateStore over loopback HTTP', () => {
  let internal: Awaited<ReturnType<typeof serve>>;
  let redirecting: Awaited<ReturnType<typeof serve>>;

  beforeAll(async () => {
    // An internal service the policy refuses: what a followed redirect would reach, and echo.
    internal = await serve((_req, res) => {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('INTERNAL-ONLY: db_password=hunter2');
    });
    // The secret's server (allowed, as a public host would be): every answer a 307 to the internal one.
    redirecting = await serve((req, res) => {
      res.writeHead(307, { location: `http://127.0.0.1:${internal.port}/internal${req.url}` });
      res.end();
    });
  });

  afterAll(async () => {
    for (const s of [internal.server, redirecting.server]) await new Promise((done) => s.close(done));
  });

  it('never follows a redirect: each call is refused, saying so, and the other address sees nothing', async () => {
    const policy = new EgressPolicy([{ host: '127.0.0.1', port: redirecting.port }]);
    // The gRPC port is the allowed one too: only the HTTP answer can lead elsewhere.
    const url = `http://127.0.0.1:${redirecting.port}`;
    const store = new WeaviateStore({ url, grpcPort: String(redirecting.port), apiKey: 'wk' }, policy);
    const calls: [string, () => Promise<unknown>][] = [
      ['probe', () => store.probe()],
      ['list', () => store.list()],
      ['ensure', () => store.ensure('Docs', 3)],
      ['creationMark', () => store.creationMark('Docs')],
      ['drop', () => store.drop('Docs')],
    ];
    for (const [what, call] of calls) {
      const err = await call().then(
        () => new Error(`${what} succeeded`),
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ServiceUnavailableError);
      expect((err as Error).message).toMatch(
        /^weaviate at http:\/\/127\.0\.0\.1:\d+ answered with a redirect \(HTTP 307\), which is not followed$/,
      );
      expect((err as Error).message).not.toContain('INTERNAL-ONLY');
    }
    await store.close();
    expect(redirecting.hits.length).toBeGreaterThanOrEqual(calls.length);
    expect(internal.hits).toEqual([]);
  });
});
