import { IncomingMessage, Server, createServer, request } from 'node:http';
import { AddressInfo, connect } from 'node:net';
import { EgressPolicy } from './egress-policy';
import { EgressProxy, TAP_RUN_HEADER } from './egress-proxy';

/** A loopback HTTP server that says who it is: the stand-in for a source on the network. */
async function origin(name: string): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      res.setHeader('x-origin', name);
      res.end(`${name} ${req.method} ${req.url} host=${req.headers.host} body=${body}`);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { server, port: (server.address() as AddressInfo).port };
}

/** A loopback server that answers with the request headers it received, counting the requests. */
async function echo(): Promise<{ server: Server; port: number; seen: string[] }> {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.end(JSON.stringify(req.headers));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { server, port: (server.address() as AddressInfo).port, seen };
}

function viaProxy(
  proxy: EgressProxy,
  url: string,
  body?: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string; headers: IncomingMessage['headers'] }> {
  return new Promise((resolve, reject) => {
    const method = body === undefined ? 'GET' : 'POST';
    const req = request({ socketPath: proxy.socketPath, path: url, method, headers }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A raw CONNECT through the proxy, then one HTTP request inside the tunnel. */
function tunnel(proxy: EgressProxy, authority: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(proxy.socketPath);
    let text = '';
    socket.on('data', (c: Buffer) => {
      text += c.toString();
      if (text.startsWith('HTTP/1.1 200 Connection Established\r\n\r\n') && !text.includes('GET-SENT')) {
        text += 'GET-SENT';
        socket.write(`GET /inside HTTP/1.1\r\nhost: ${authority}\r\nconnection: close\r\n\r\n`);
      }
    });
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
    socket.write(`CONNECT ${authority} HTTP/1.1\r\nhost: ${authority}\r\n\r\n`);
  });
}

describe('EgressProxy', () => {
  let allowed: { server: Server; port: number };
  let other: { server: Server; port: number };
  let proxy: EgressProxy;
  const refusals: string[] = [];

  beforeAll(async () => {
    allowed = await origin('allowed');
    other = await origin('other');
    const policy = new EgressPolicy([{ host: '127.0.0.1', port: allowed.port }]);
    proxy = await EgressProxy.open({ policy, onRefused: (m) => refusals.push(m) });
  });
  afterAll(async () => {
    await proxy.close();
    allowed.server.close();
    other.server.close();
  });

  it('forwards plain HTTP to an allowed endpoint, body and Host header intact', async () => {
    const r = await viaProxy(proxy, `http://127.0.0.1:${allowed.port}/path?q=1`, 'payload');
    expect(r.status).toBe(200);
    expect(r.headers['x-origin']).toBe('allowed');
    expect(r.text).toBe(`allowed POST /path?q=1 host=127.0.0.1:${allowed.port} body=payload`);
  });

  it('refuses loopback endpoints that are not allow-listed, saying why', async () => {
    const r = await viaProxy(proxy, `http://127.0.0.1:${other.port}/`);
    expect(r.status).toBe(403);
    expect(r.text).toContain(`connection to 127.0.0.1:${other.port} refused by the egress policy`);
    expect(refusals.some((m) => m.includes(`127.0.0.1:${other.port}`))).toBe(true);
    const name = await viaProxy(proxy, `http://localhost:${other.port}/`);
    expect(name.status).toBe(403);
    expect(name.text).toMatch(/it resolves to (127\.0\.0\.1|::1), which is a loopback/);
  });

  it('tunnels CONNECT to allowed endpoints only', async () => {
    const ok = await tunnel(proxy, `127.0.0.1:${allowed.port}`);
    expect(ok).toContain('allowed GET /inside');
    const refused = await tunnel(proxy, `127.0.0.1:${other.port}`);
    expect(refused).toMatch(
      /^HTTP\/1\.1 403 Forbidden \(connection to 127\.0\.0\.1:\d+ refused by the egress/,
    );
    expect(refused).not.toContain('other GET');
  });

  it('answers requests that are not proxy requests with 400', async () => {
    const r = await viaProxy(proxy, '/relative');
    expect(r.status).toBe(400);
    const https = await viaProxy(proxy, `https://127.0.0.1:${allowed.port}/`);
    expect(https.status).toBe(400);
  });
});

describe('EgressProxy in front of the platform API', () => {
  const forged = {
    'x-forwarded-for': '203.0.113.9',
    'x-forwarded-host': 'evil.example',
    'x-forwarded-proto': 'https',
    forwarded: 'for=203.0.113.9',
    'x-real-ip': '203.0.113.9',
    [TAP_RUN_HEADER]: '0',
  };
  let platform: Awaited<ReturnType<typeof echo>>;
  let site: Awaited<ReturnType<typeof echo>>;
  let proxy: EgressProxy;

  beforeAll(async () => {
    platform = await echo();
    site = await echo();
    const policy = new EgressPolicy({
      endpoints: [
        { host: '127.0.0.1', port: platform.port },
        { host: '127.0.0.1', port: site.port },
      ],
      hosts: [],
      // Another loopback spelling of the platform, as an operator's wide allow-list would permit.
      ranges: [{ range: '127.0.0.0/8' }],
    });
    proxy = await EgressProxy.open({
      policy,
      platform: {
        host: '127.0.0.1',
        port: platform.port,
        allows: (method, path) => method === 'GET' && path === '/api/v1/pipelines',
      },
    });
  });
  afterAll(async () => {
    await proxy.close();
    platform.server.close();
    site.server.close();
  });

  it('removes the client-address headers a script sends, to any destination', async () => {
    const r = await viaProxy(proxy, `http://127.0.0.1:${site.port}/x`, undefined, forged);
    expect(r.status).toBe(200);
    const seen = JSON.parse(r.text) as Record<string, string>;
    for (const name of ['x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'forwarded', 'x-real-ip'])
      expect(seen[name]).toBeUndefined();
    // Only requests to the platform carry the mark, and a script cannot send its own.
    expect(seen[TAP_RUN_HEADER]).toBeUndefined();
  });

  it('marks the requests it lets through to the platform, whatever the script sent', async () => {
    const r = await viaProxy(
      proxy,
      `http://127.0.0.1:${platform.port}/api/v1/pipelines?x=1`,
      undefined,
      forged,
    );
    expect(r.status).toBe(200);
    const seen = JSON.parse(r.text) as Record<string, string>;
    expect(seen[TAP_RUN_HEADER]).toBe('1');
    expect(seen['x-forwarded-for']).toBeUndefined();
    expect(seen.forwarded).toBeUndefined();
  });

  it('refuses platform routes outside the allow-list itself, under any spelling of the address', async () => {
    const before = platform.seen.length;
    for (const url of [
      `http://127.0.0.1:${platform.port}/api/v1/auth/login`,
      `http://127.0.0.1:${platform.port}/api/v1/pipelines/../auth/login`,
      `http://127.0.0.2:${platform.port}/api/v1/auth/login`,
      `http://localhost:${platform.port}/api/v1/auth/login`,
    ]) {
      const r = await viaProxy(proxy, url, '{"username":"admin","password":"guess"}');
      expect(r.status).toBe(403);
      expect(r.text).toContain('a tap run may not call POST /api/v1/auth/login on the platform');
    }
    const get = await viaProxy(proxy, `http://127.0.0.1:${platform.port}/api/v1/keys`);
    expect(get.status).toBe(403);
    expect(platform.seen.length).toBe(before);
  });

  it('refuses a CONNECT tunnel to the platform (raw bytes would pass unchecked)', async () => {
    const before = platform.seen.length;
    const refused = await tunnel(proxy, `127.0.0.1:${platform.port}`);
    expect(refused).toMatch(/^HTTP\/1\.1 403 Forbidden \(connection to 127\.0\.0\.1:\d+ refused/);
    expect(refused).toContain('plain http:// requests through the proxy, never a tunnel');
    expect(platform.seen.length).toBe(before);
  });
});
