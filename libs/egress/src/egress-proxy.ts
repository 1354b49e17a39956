import { chmod, mkdtemp, rm } from 'node:fs/promises';
import {
  IncomingHttpHeaders,
  IncomingMessage,
  OutgoingHttpHeaders,
  Server,
  ServerResponse,
  createServer,
  request as httpRequest,
} from 'node:http';
import { Socket, connect, isIP } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Duplex, finished } from 'node:stream';
import { normalizeHost } from '@tapyard/core';
import { isLoopbackAddress } from './addresses';
import { EgressPolicy, EgressRefused, Permit } from './egress-policy';

/** The platform's own API as the proxy guards it: where it listens and which calls a run may make. */
export interface PlatformRoute {
  host: string;
  port: number;
  /** Whether a script may send `method pathname` to the platform (e.g. runKeyMayCall). */
  allows: (method: string, pathname: string) => boolean;
}

export interface EgressProxyOptions {
  policy: EgressPolicy;
  /** Called once per refused or failed connection with a sentence for the run's logs. */
  onRefused?: (message: string) => void;
  /** Connections open at once (tunnels and forwarded requests); more are refused with 503. */
  maxConnections?: number;
  /** A connection that moves no byte for this long is closed. */
  idleMs?: number;
  connectTimeoutMs?: number;
  /** Requests to the platform are limited to these routes and marked with TAP_RUN_HEADER. */
  platform?: PlatformRoute;
}

/**
 * Set by the proxy on every request it forwards to the platform (after removing any copy the script
 * sent), so the API can tell a tap run's traffic. It can only take rights away, so a client outside
 * the sandbox that sends it gains nothing.
 */
export const TAP_RUN_HEADER = 'x-tapyard-tap-run';

/**
 * Client-address headers a script could forge to pass for another client (the API's login back-off
 * keys on the address when TRUST_PROXY trusts loopback): removed from every forwarded request.
 */
const CLIENT_ADDRESS = /^(forwarded|x-forwarded-.*|x-real-ip|x-client-ip|true-client-ip|cf-connecting-ip)$/;

// Hop-by-hop headers (RFC 9110 7.6.1) and the proxy's own: never forwarded.
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/**
 * The only way out for a sandboxed script: an HTTP proxy (CONNECT tunnels for HTTPS, absolute-form
 * requests for plain HTTP) listening on a Unix socket that is bound into the sandbox, whose own
 * network namespace has nothing but loopback. Every destination passes the egress policy after DNS
 * resolution, and the connection goes to the address the policy saw.
 */
export class EgressProxy {
  private readonly server: Server;
  private readonly sockets = new Set<Duplex>();
  private readonly maxConnections: number;
  private readonly idleMs: number;
  private readonly connectTimeoutMs: number;
  private active = 0;

  private constructor(
    private readonly options: EgressProxyOptions,
    readonly socketPath: string,
    private readonly dir: string,
  ) {
    this.maxConnections = options.maxConnections ?? 128;
    this.idleMs = options.idleMs ?? 300_000;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
    this.server = createServer((req, res) => void this.forward(req, res));
    this.server.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      void this.tunnel(req, socket, head);
    });
    this.server.on('connection', (socket: Socket) => this.track(socket));
    this.server.on('clientError', (_err, socket) => socket.destroy());
  }

  /** A proxy on a fresh Unix socket that any local user may connect to (the sandbox user is nobody). */
  static async open(options: EgressProxyOptions): Promise<EgressProxy> {
    const dir = await mkdtemp(join(tmpdir(), 'tapyard-egress-'));
    const proxy = new EgressProxy(options, join(dir, 'proxy.sock'), dir);
    await new Promise<void>((resolve, reject) => {
      proxy.server.once('error', reject);
      proxy.server.listen(proxy.socketPath, () => resolve());
    });
    await chmod(proxy.socketPath, 0o666);
    return proxy;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await rm(this.dir, { recursive: true, force: true });
  }

  private track(socket: Duplex): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    socket.on('error', () => undefined);
  }

  /** CONNECT host:port: a byte tunnel, used by HTTPS clients (and anything else that speaks TLS). */
  private async tunnel(req: IncomingMessage, client: Duplex, head: Buffer): Promise<void> {
    const target = parseAuthority(req.url ?? '');
    if (!target) return refuseRaw(client, 400, 'Bad Request', 'CONNECT needs host:port');
    if (!this.acquire()) return refuseRaw(client, 503, 'Service Unavailable', 'too many connections');
    try {
      const { permit, platform } = await this.route(target.host, target.port);
      if (platform) {
        throw new EgressRefused(
          target.host,
          target.port,
          'the platform API is reached with plain http:// requests through the proxy, never a tunnel',
        );
      }
      const upstream = await this.connectTo(target.host, target.port, permit);
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      this.pipeBoth(client, upstream);
    } catch (err) {
      this.release();
      const { status, text, message } = this.failure(err);
      refuseRaw(client, status, text, message);
    }
  }

  /** An absolute-form request (`GET http://host/path`): plain HTTP through the proxy. */
  private async forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let url: URL;
    try {
      url = new URL(req.url ?? '');
      if (url.protocol !== 'http:') throw new Error('not http');
    } catch {
      return refuse(res, 400, 'this is an HTTP proxy: send absolute http:// URLs, or CONNECT for https');
    }
    if (!this.acquire()) return refuse(res, 503, 'too many connections');
    const port = url.port === '' ? 80 : Number(url.port);
    let upstream: Socket;
    const headers = forwardedHeaders(req.headers, url.host);
    for (const name of Object.keys(headers)) {
      if (CLIENT_ADDRESS.test(name) || name === TAP_RUN_HEADER) delete headers[name];
    }
    try {
      const { permit, platform } = await this.route(url.hostname, port);
      if (platform) {
        const method = req.method ?? 'GET';
        if (!this.options.platform?.allows(method, url.pathname)) {
          throw new EgressRefused(
            url.hostname,
            port,
            `a tap run may not call ${method} ${url.pathname.slice(0, 200)} on the platform (only the read-only routes of its run key)`,
          );
        }
        headers[TAP_RUN_HEADER] = '1';
      }
      upstream = await this.connectTo(url.hostname, port, permit);
    } catch (err) {
      const { status, message } = this.failure(err);
      // Closing before the body is read would reset the connection, and the client would lose the answer.
      req.resume();
      return void finished(req, () => {
        this.release();
        refuse(res, status, message);
      });
    }
    const out = httpRequest({
      createConnection: () => upstream,
      method: req.method,
      path: `${url.pathname}${url.search}`,
      headers,
      setHost: false,
    });
    out.on('response', (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, forwardedHeaders(answer.headers));
      answer.pipe(res);
    });
    out.on('error', () => {
      if (!res.headersSent) refuse(res, 502, `${url.host} closed the connection`);
      else res.destroy();
    });
    res.once('close', () => {
      upstream.destroy();
      this.release();
    });
    req.pipe(out);
  }

  /** Where a connection may go (the policy's checked address) and whether that is the platform's API. */
  private async route(host: string, port: number): Promise<{ permit: Permit; platform: boolean }> {
    const permit = await this.options.policy.check(host, port);
    return { permit, platform: await this.isPlatform(host, port, permit) };
  }

  /**
   * The platform by its configured name, by the address that name resolves to, or by any address of
   * this machine on the platform's port: a script must not reach the API unguarded under another name.
   */
  private async isPlatform(host: string, port: number, permit: Permit): Promise<boolean> {
    const platform = this.options.platform;
    if (!platform || port !== platform.port) return false;
    if (normalizeHost(host) === normalizeHost(platform.host)) return true;
    if (isLoopbackAddress(permit.address) || localAddresses().has(permit.address)) return true;
    const own = isIP(platform.host)
      ? platform.host
      : (await this.options.policy.check(platform.host, platform.port).catch(() => null))?.address;
    return own !== undefined && normalizeHost(own) === normalizeHost(permit.address);
  }

  private connectTo(host: string, port: number, permit: Permit): Promise<Socket> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: permit.address, port, family: permit.family });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`${host}:${port} did not answer within ${this.connectTimeoutMs} ms`));
      }, this.connectTimeoutMs);
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.setTimeout(this.idleMs, () => socket.destroy());
        this.track(socket);
        resolve(socket);
      });
      socket.once('error', (err) => {
        clearTimeout(timer);
        reject(new Error(`${host}:${port}: ${err.message}`));
      });
    });
  }

  private pipeBoth(client: Duplex, upstream: Socket): void {
    let released = false;
    const done = (): void => {
      if (!released) {
        released = true;
        this.release();
      }
      client.destroy();
      upstream.destroy();
    };
    client.once('close', done);
    upstream.once('close', done);
    client.pipe(upstream);
    upstream.pipe(client);
  }

  private failure(err: unknown): { status: number; text: string; message: string } {
    const message = (err as Error).message;
    this.options.onRefused?.(message);
    return err instanceof EgressRefused
      ? { status: 403, text: 'Forbidden', message }
      : { status: 502, text: 'Bad Gateway', message };
  }

  private acquire(): boolean {
    if (this.active >= this.maxConnections) return false;
    this.active += 1;
    return true;
  }

  private release(): void {
    this.active -= 1;
  }
}

function localAddresses(): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) out.add(normalizeHost(a.address.replace(/%.*$/, '')));
  }
  return out;
}

function parseAuthority(text: string): { host: string; port: number } | null {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[^:\s/[\]]+):(\d{1,5})$/.exec(text);
  return m ? { host: m[1], port: Number(m[2]) } : null;
}

function forwardedHeaders(headers: IncomingHttpHeaders, host?: string): OutgoingHttpHeaders {
  const named = new Set(
    String(headers.connection ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase()),
  );
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || named.has(name)) continue;
    out[name] = value;
  }
  if (host !== undefined) out.host = host;
  return out;
}

/** The reason travels in the status line too: clients such as requests show only that for CONNECT. */
function refuseRaw(socket: Duplex, status: number, text: string, message: string): void {
  const reason = `${text} (${message})`.replace(/[^\x20-\x7e]/g, ' ').slice(0, 300);
  const body = `${message}\n`;
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: text/plain; charset=utf-8\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

function refuse(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' });
  res.end(`${message}\n`);
}
