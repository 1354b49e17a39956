import { connect, createServer, Server, Socket } from 'node:net';

/**
 * Ports below the kernel's ephemeral range (32768-60999) that no peer of the suite listens on (Milvus has 19530,
 * FerretDB 27017): `listen(0)`, which every test double uses, never hands one out, so a port found closed here stays
 * closed. A port released from the ephemeral range did not: another Jest worker's double could be given it a moment
 * later (a "down" MongoDB once answered as an S3 double). Each worker takes its own slice, in turn, so two workers
 * never pick the same port either.
 */
const SLICE = 1000;
const FIRST = 10_000;
const worker = Number(process.env.JEST_WORKER_ID ?? 1) % 8;
let next = Math.floor(Math.random() * SLICE);

function bindable(port: number): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A port on 127.0.0.1 that nothing listens on and no test double will be given. */
export async function closedPort(): Promise<number> {
  for (let tries = 0; tries < SLICE; tries += 1) {
    const port = FIRST + worker * SLICE + (next++ % SLICE);
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port in ${FIRST + worker * SLICE}-${FIRST + (worker + 1) * SLICE - 1}`);
}

/** Accepts connections and never answers: a peer that hangs. */
export async function blackhole(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A connection to `targetPort` for `client`, each closed with the other, both tracked in `sockets`. */
function connectUpstream(client: Socket, targetPort: number, sockets: Set<Socket>): Socket {
  const upstream = connect({ host: '127.0.0.1', port: targetPort });
  for (const s of [client, upstream]) {
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
  }
  client.on('close', () => upstream.destroy());
  upstream.on('close', () => client.destroy());
  return upstream;
}

/**
 * A TCP relay to a local port that a test can cut (every connection dropped, new ones refused) and
 * restore: an outage of a real server, without stopping it for the other suites. `cutAfter(n)` cuts
 * by itself once n more bytes went upstream, which puts the outage inside a load (rows on the wire)
 * whatever the speed of the machine.
 */
export interface Relay {
  readonly port: number;
  cut(): void;
  restore(): void;
  cutAfter(bytes: number): void;
  /** Bytes the clients sent upstream so far. */
  sent(): number;
  close(): Promise<void>;
}

/** `listenPort`: a fixed port (a Kafka listener advertises it); by default any free one. */
export async function cuttableProxy(targetPort: number, listenPort = 0): Promise<Relay> {
  const sockets = new Set<Socket>();
  let down = false;
  let tripAt: number | null = null;
  let sent = 0;
  const cut = () => {
    down = true;
    tripAt = null;
    for (const s of sockets) s.destroy();
  };
  const server: Server = createServer((client) => {
    if (down) return client.destroy();
    const upstream = connectUpstream(client, targetPort, sockets);
    client.on('data', (chunk: Buffer) => {
      if (down) return;
      sent += chunk.length;
      // The chunk that crosses the line is not forwarded: the server never sees the load complete.
      if (tripAt !== null && sent >= tripAt) return cut();
      if (!upstream.write(chunk)) {
        client.pause();
        upstream.once('drain', () => client.resume());
      }
    });
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(listenPort, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    cut,
    restore: () => {
      down = false;
    },
    cutAfter: (bytes) => {
      tripAt = sent + bytes;
    },
    sent: () => sent,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * A relay to a PostgreSQL server that counts the client's round trips (a simple query, or an
 * extended-protocol exchange up to its Sync) whose bytes hold `marker` (a table's name, in the text or
 * a parameter): the statements a client sent about that table, whatever else shares the connection.
 */
export async function countingPgRelay(
  targetPort: number,
  marker: string,
): Promise<{ port: number; count(): number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const needle = Buffer.from(marker);
  let counted = 0;
  const server: Server = createServer((client) => {
    const upstream = connectUpstream(client, targetPort, sockets);
    let pending = Buffer.alloc(0);
    let started = false;
    let exchange = false;
    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk);
      pending = Buffer.concat([pending, chunk]);
      // Frontend messages: the startup message has no type byte; every other one is a type byte
      // and a length that counts itself.
      for (;;) {
        const head = started ? 1 : 0;
        if (pending.length < head + 4) break;
        const length = pending.readInt32BE(head);
        if (pending.length < head + length) break;
        const type = started ? String.fromCharCode(pending[0]) : '';
        const body = pending.subarray(head + 4, head + length);
        pending = pending.subarray(head + length);
        if (!started) {
          // An SSLRequest (80877103) is answered before the real startup message.
          started = body.readInt32BE(0) !== 80877103;
          continue;
        }
        if ((type === 'Q' || type === 'P' || type === 'B') && body.includes(needle)) exchange = true;
        if (type === 'Q' || type === 'S') {
          if (exchange) counted++;
          exchange = false;
        }
      }
    });
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    count: () => counted,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
