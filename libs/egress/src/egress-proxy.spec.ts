import { IncomingMessage, Server, createServer, request } from 'node:http';
import { AddressInfo, connect } from 'node:net';
import { EgressPolicy } from './egress-policy';
import { EgressProxy } from './egress-proxy';

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

function viaProxy(
  proxy: EgressProxy,
  url: string,
  body?: string,
): Promise<{ status: number; text: string; headers: IncomingMessage['headers'] }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: proxy.socketPath, path: url, method: body ? 'POST' : 'GET' }, (res) => {
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
