import { IncomingMessage, Server, ServerResponse, createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

interface Gate {
  size: number;
  maxWaitMs: number;
  waiting: (() => void)[];
  timer?: NodeJS.Timeout;
}

interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

export interface SinkRequest {
  path: string;
  method: string;
  headers: IncomingMessage['headers'];
  rows: number;
  /** The body's length as received (compressed, when it was). */
  bytes: number;
  at: number;
  /** The client's port: requests on one kept-alive connection share it. */
  clientPort: number;
}

/**
 * A receiving HTTP endpoint for REST-sink tests, on loopback: takes JSON arrays or NDJSON, keeps the
 * rows per path, and honours `Idempotency-Key` as receivers that offer it do (a repeated key is
 * acknowledged and not stored again). Scripted answers (`fail`) come before normal handling; a path
 * made to `hang` reads each request and never answers it (HEAD requests, which carry no JSON, still
 * get a 400): an endpoint that accepts the connection and goes silent.
 */
export class RestSink {
  readonly requests: SinkRequest[] = [];
  private readonly stored = new Map<string, Record<string, unknown>[]>();
  /** NDJSON rows as the sink wrote them, per path (a JSON parse would lose a bigint's digits). */
  private readonly storedTexts = new Map<string, string[]>();
  private readonly seenKeys = new Set<string>();
  private readonly scripted: Answer[] = [];
  private readonly scriptedBatches = new Map<number, Answer>();
  private readonly hung = new Set<string>();
  private readonly resets = new Set<number>();
  private readonly held = new Set<ServerResponse>();
  private readonly gates = new Map<string, Gate>();
  private readonly open = new Map<string, number>();
  private readonly mostOpen = new Map<string, number>();
  private server: Server | null = null;
  port = 0;

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }

  /** The next requests get these answers (in order) instead of being stored. */
  fail(...answers: Answer[]): void {
    this.scripted.push(...answers);
  }

  /**
   * The first request of batch `n` (Idempotency-Key `<token>:<n>`) gets this answer instead of being
   * stored, whatever order the batches in flight arrive in.
   */
  failBatch(n: number, answer: Answer): void {
    this.scriptedBatches.set(n, answer);
  }

  /**
   * The first request of batch `n` is stored (its key seen), then its connection is reset before any
   * answer: the sender cannot tell whether the batch arrived.
   */
  resetBatch(n: number): void {
    this.resets.add(n);
  }

  /** Requests to `path` are read and left unanswered. */
  hang(path: string): void {
    this.hung.add(path);
  }

  /**
   * Requests to `path` are answered in groups of `size`: each waits until that many are open at once
   * (or `maxWaitMs` passed since the group's first, so a sender that never opens as many still ends).
   */
  gate(path: string, size: number, maxWaitMs = 10_000): void {
    this.gates.set(path, { size, maxWaitMs, waiting: [] });
  }

  /** The most requests to `path` that were open (read, not yet answered) at once. */
  maxOpen(path: string): number {
    return this.mostOpen.get(path) ?? 0;
  }

  /** Requests held unanswered whose client is still connected. */
  get hanging(): number {
    return this.held.size;
  }

  /** `path` answers again; the requests held get a 503 (a sink retries them). */
  release(path: string): void {
    this.hung.delete(path);
    for (const res of this.held) res.writeHead(503).end();
  }

  rows(path: string): Record<string, unknown>[] {
    return this.stored.get(path) ?? [];
  }

  /** The NDJSON lines stored for `path`, as they were sent. */
  texts(path: string): string[] {
    return this.storedTexts.get(path) ?? [];
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const path = (req.url ?? '').split('?')[0];
    const received = Buffer.concat(chunks);
    // A body sent with Content-Encoding: gzip is read as receivers that accept it do; a broken one is a 400.
    let body = received;
    try {
      if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(received);
    } catch {
      res.writeHead(400).end('not gzip');
      return;
    }
    const text = body.toString('utf8');
    const type = String(req.headers['content-type'] ?? '');
    let rows: Record<string, unknown>[];
    try {
      rows = type.includes('ndjson')
        ? text
            .split('\n')
            .filter((l) => l.trim() !== '')
            .map((l) => JSON.parse(l) as Record<string, unknown>)
        : (JSON.parse(text) as Record<string, unknown>[]);
    } catch {
      res.writeHead(400).end('not JSON');
      return;
    }
    this.requests.push({
      path,
      method: req.method ?? '',
      headers: req.headers,
      rows: rows.length,
      bytes: received.length,
      at: Date.now(),
      clientPort: req.socket.remotePort ?? 0,
    });
    const open = (this.open.get(path) ?? 0) + 1;
    this.open.set(path, open);
    this.mostOpen.set(path, Math.max(open, this.maxOpen(path)));
    // Closed once its answer is handed to the socket ('finish'), before the sender can read it.
    let closed = false;
    const close = () => {
      if (!closed) this.open.set(path, (this.open.get(path) ?? 1) - 1);
      closed = true;
    };
    res.once('finish', close).once('close', close);
    const gate = this.gates.get(path);
    if (gate) await passing(gate);
    if (this.hung.has(path)) {
      this.held.add(res);
      res.on('close', () => this.held.delete(res));
      return;
    }
    const key = req.headers['idempotency-key'];
    const batch = typeof key === 'string' ? Number(key.split(':').pop()) : NaN;
    const scripted = this.scriptedBatches.get(batch) ?? this.scripted.shift();
    this.scriptedBatches.delete(batch);
    if (scripted) {
      res.writeHead(scripted.status, scripted.headers ?? {}).end(scripted.body ?? '');
      return;
    }
    if (typeof key === 'string' && this.seenKeys.has(`${path}|${key}`)) {
      res.writeHead(200).end('{"duplicate":true}');
      return;
    }
    if (typeof key === 'string') this.seenKeys.add(`${path}|${key}`);
    this.stored.set(path, [...this.rows(path), ...rows]);
    if (type.includes('ndjson')) {
      const texts = this.storedTexts.get(path) ?? [];
      for (const line of text.split('\n')) if (line !== '') texts.push(line);
      this.storedTexts.set(path, texts);
    }
    if (this.resets.delete(batch)) {
      req.socket.resetAndDestroy();
      return;
    }
    res.writeHead(201, { 'content-type': 'application/json' }).end(`{"stored":${rows.length}}`);
  }
}

/** Resolves once `gate.size` requests wait at it, or its longest wait ran out: then all of them pass. */
function passing(gate: Gate): Promise<void> {
  return new Promise((resolve) => {
    gate.waiting.push(resolve);
    const release = () => {
      clearTimeout(gate.timer);
      gate.timer = undefined;
      for (const pass of gate.waiting.splice(0)) pass();
    };
    if (gate.waiting.length >= gate.size) release();
    else gate.timer ??= setTimeout(release, gate.maxWaitMs);
  });
}
