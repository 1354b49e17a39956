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
import { Socket, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Duplex } from 'node:stream';
import { EgressPolicy, EgressRefused } from './egress-policy';

export interface EgressProxyOptions {
  policy: EgressPolicy;
  /** Called once per refused or failed connection with a sentence for the run's logs. */
  onRefused?: (message: string) => void;
  /** Connections open at once (tunnels and forwarded requests); more are refused with 503. */
  maxConnections?: number;
  /** A connection that moves no byte for this long is closed. */
  idleMs?: number;
  connectTimeoutMs?: number;
}

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
      const upstream = await this.open(target.host, target.port);
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
    try {
      upstream = await this.open(url.hostname, port);
    } catch (err) {
      this.release();
      const { status, message } = this.failure(err);
      return refuse(res, status, message);
    }
    const out = httpRequest({
      createConnection: () => upstream,
      method: req.method,
      path: `${url.pathname}${url.search}`,
      headers: forwardedHeaders(req.headers, url.host),
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

  private async open(host: string, port: number): Promise<Socket> {
    const permit = await this.options.policy.check(host, port);
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
