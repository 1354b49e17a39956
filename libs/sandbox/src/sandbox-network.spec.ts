import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { Server, createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { EgressPolicy, EgressProxy } from '@tapyard/egress';
import { SandboxFixture, py, runScript, sandboxFixture } from './spec-fixtures';

/** A non-loopback address of this machine, if it has one: the host's side of a private network. */
function hostAddress(): string | null {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (!a.internal && a.family === 'IPv4') return a.address;
  }
  return null;
}

const PAYLOAD = randomBytes(3 * 1024 * 1024);

async function listen(handler: Parameters<typeof createServer>[1], host = '0.0.0.0'): Promise<Server> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, host, () => r()));
  return server;
}
const portOf = (s: Server): number => (s.address() as AddressInfo).port;

// Each probe returns what happened: "ok <detail>" or the exception's class and message.
const PROBES = py(
  'import json, os, socket, urllib.request, http.client',
  'def attempt(f):',
  '    try:',
  '        return "ok " + str(f())',
  '    except Exception as e:',
  '        return type(e).__name__ + ": " + str(e)',
  'def tcp(host, port):',
  '    s = socket.create_connection((host, port), timeout=3)',
  '    s.close()',
  '    return "connected"',
  'def get(url):',
  '    with urllib.request.urlopen(url, timeout=10) as r:',
  '        return r.read().decode()',
  'def tunnelled(port):',
  '    c = http.client.HTTPConnection("127.0.0.1", 3128, timeout=10)',
  '    c.set_tunnel("127.0.0.1", port)',
  '    c.request("GET", "/through-tunnel")',
  '    return c.getresponse().read().decode()',
  'def download(url):',
  '    import hashlib',
  '    with urllib.request.urlopen(url, timeout=30) as r:',
  '        return hashlib.sha256(r.read()).hexdigest()',
  'def fetch():',
  '    a = json.loads(os.environ["PROBE"])',
  '    out = {"proxy": os.environ.get("HTTPS_PROXY")}',
  '    out["loopback_tcp"] = attempt(lambda: tcp("127.0.0.1", a["private"]))',
  '    if a.get("host"): out["host_tcp"] = attempt(lambda: tcp(a["host"], a["private"]))',
  '    out["dns"] = attempt(lambda: socket.getaddrinfo("example.com", 443))',
  '    out["private_get"] = attempt(lambda: get("http://127.0.0.1:%d/" % a["private"]))',
  '    if a.get("allowed"):',
  '        out["allowed_get"] = attempt(lambda: get("http://127.0.0.1:%d/hello" % a["allowed"]))',
  '        out["allowed_tunnel"] = attempt(lambda: tunnelled(a["allowed"]))',
  '        out["download"] = attempt(lambda: download("http://127.0.0.1:%d/big" % a["allowed"]))',
  '    return [out]',
);

(existsSync('/usr/bin/bwrap') ? describe : describe.skip)('bwrap network isolation', () => {
  let fx: SandboxFixture;
  let privateServer: Server;
  let allowedServer: Server;
  beforeAll(async () => {
    fx = await sandboxFixture('bwrap', { limits: { timeoutMs: 60_000 } });
    privateServer = await listen((_req, res) => res.end('platform secret'));
    allowedServer = await listen(
      (req, res) => res.end(req.url === '/big' ? PAYLOAD : `allowed ${req.url}`),
      '127.0.0.1',
    );
  });
  afterAll(async () => {
    privateServer.close();
    allowedServer.close();
    await fx.close();
  });

  it('gives a script without an egress socket no network at all', async () => {
    const host = hostAddress();
    const probe = JSON.stringify({ private: portOf(privateServer), host });
    const { records, outcome } = await runScript(fx, PROBES, { env: { PROBE: probe } });
    expect(outcome.error).toBeNull();
    const r = records[0] as Record<string, string>;
    expect(r.proxy).toBeNull();
    expect(r.loopback_tcp).toMatch(/^ConnectionRefusedError/);
    if (host) expect(r.host_tcp).toMatch(/^OSError: \[Errno 101\] Network is unreachable/);
    expect(r.dns).toMatch(/^gaierror/);
    expect(r.private_get).toMatch(/^URLError/);
  });

  it('reaches allowed endpoints through the egress proxy, and nothing else', async () => {
    const policy = new EgressPolicy([{ host: '127.0.0.1', port: portOf(allowedServer) }]);
    const proxy = await EgressProxy.open({ policy });
    try {
      const probe = JSON.stringify({ private: portOf(privateServer), allowed: portOf(allowedServer) });
      const { records, outcome } = await runScript(fx, PROBES, {
        env: { PROBE: probe },
        egressSocket: proxy.socketPath,
      });
      expect(outcome.error).toBeNull();
      const r = records[0] as Record<string, string>;
      expect(r.proxy).toBe('http://127.0.0.1:3128');
      // Direct connections still go nowhere; the proxy refuses the host's own services.
      expect(r.loopback_tcp).toMatch(/^ConnectionRefusedError/);
      expect(r.dns).toMatch(/^gaierror/);
      expect(r.private_get).toMatch(/^HTTPError: HTTP Error 403/);
      expect(r.allowed_get).toBe('ok allowed /hello');
      expect(r.allowed_tunnel).toBe('ok allowed /through-tunnel');
      expect(r.download).toBe(`ok ${createHash('sha256').update(PAYLOAD).digest('hex')}`);
    } finally {
      await proxy.close();
    }
  });
});
