import { Socket, connect } from 'node:net';

/**
 * Opens a TCP connection, writes `request`, and resolves with the bytes read until `complete`
 * says the answer is whole. Used by the Kafka and STOMP probes, which speak just enough of each
 * protocol to prove a real broker is answering (an open port alone proves nothing).
 */
export function tcpExchange(
  host: string,
  port: number,
  request: Buffer,
  complete: (received: Buffer) => boolean,
  signal: AbortSignal,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket: Socket = connect({ host, port });
    const finish = (err?: Error) => {
      signal.removeEventListener('abort', onAbort);
      socket.destroy();
      if (err) reject(err);
      else resolve(Buffer.concat(chunks));
    };
    const onAbort = () => finish(new Error('probe aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    socket.once('connect', () => socket.write(request));
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      if (complete(Buffer.concat(chunks))) finish();
    });
    socket.once('error', (e) => finish(e));
    socket.once('end', () => finish(new Error(`connection to ${host}:${port} closed before a full answer`)));
  });
}

export function splitHostPort(hostPort: string, defaultPort: number): { host: string; port: number } {
  const m = /^\[?([^\]]+?)\]?(?::(\d+))?$/.exec(hostPort);
  if (!m) throw new Error(`invalid address ${hostPort}`);
  return { host: m[1], port: m[2] ? Number(m[2]) : defaultPort };
}
