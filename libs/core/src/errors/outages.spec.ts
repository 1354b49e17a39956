import { AddressInfo, Server, Socket, createServer } from 'node:net';
import { Pool } from 'pg';
import { ServiceUnavailableError } from './errors';
import { isOutage } from './outages';

/** A TCP server on loopback that does `onConnection` with every connection it gets. */
async function server(
  onConnection: (s: Socket) => void,
): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const srv: Server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
    onConnection(s);
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return {
    port: (srv.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        srv.close(() => r());
      }),
  };
}

/** What a query on a node-postgres pool (as the platform's) rejects with against that server. */
async function queryError(port: number, connectionTimeoutMillis: number): Promise<Error> {
  const pool = new Pool({ host: '127.0.0.1', port, user: 'u', database: 'd', connectionTimeoutMillis });
  pool.on('error', () => undefined);
  try {
    await pool.query('SELECT 1');
  } catch (err) {
    return err as Error;
  } finally {
    await pool.end().catch(() => undefined);
  }
  throw new Error('the query was expected to fail');
}

describe('isOutage: which failures a later attempt may get past', () => {
  it('a database connection that took too long to open, or was dropped, is retried; a refusal is not', async () => {
    // A server that takes the connection and never answers: a PostgreSQL too slow to start a session,
    // as the platform's was under load in CI when a document job read its embedding secret (a document
    // job, which ended for good on it before, now asks this).
    const silent = await server(() => undefined);
    const dropping = await server((s) => s.destroy());
    try {
      const slow = await queryError(silent.port, 200);
      expect(slow.message).toBe('Connection terminated due to connection timeout');
      expect(isOutage(slow)).toBe(true);
      // As the metadata repositories pass it on: wrapped, the driver's error as its cause.
      expect(isOutage(new Error(`cannot read the secret: ${slow.message}`, { cause: slow }))).toBe(true);

      const dropped = await queryError(dropping.port, 5000);
      expect(dropped.message).toMatch(/Connection terminated|ECONNRESET/);
      expect(isOutage(dropped)).toBe(true);
    } finally {
      await silent.close();
      await dropping.close();
    }
    expect(isOutage(new ServiceUnavailableError('milvus', 'milvus is unreachable'))).toBe(true);
    // What the server refused or the caller got wrong stays final: a delivery again would fail the same.
    expect(isOutage(Object.assign(new Error('relation "x" does not exist'), { code: '42P01' }))).toBe(false);
    expect(isOutage(new Error("secret 'embedding' has no apiKey"))).toBe(false);
  }, 30_000);
});
