import { createServer as createTcpServer, Server } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { EgressPolicy } from '@tapyard/egress';

/** A listener that records who connected and the server name of each TLS ClientHello, then hangs up. */
export interface HelloRecorder {
  connections: number;
  serverNames: string[];
}

/**
 * A DNS-rebinding name, as the stores meet it: the egress policy's lookup of `localhost` answers
 * 127.0.0.2 (what the check saw, allow-listed here as a public answer would pass), where `checked`
 * listens; any second lookup by the system answers 127.0.0.1 or ::1, where `other` listens on the
 * same port (the private address a rebinding name would move the connection to). Neither finishes a
 * handshake: what matters is where the connection and its ClientHello went.
 */
export async function rebindingName(attempts = 5): Promise<{
  port: number;
  policy: EgressPolicy;
  checked: HelloRecorder;
  other: HelloRecorder;
  close(): Promise<void>;
}> {
  const servers: Server[] = [];
  const listener = (): { server: Server; hellos: HelloRecorder } => {
    const hellos: HelloRecorder = { connections: 0, serverNames: [] };
    const server = createTlsServer({
      SNICallback: (name, done) => {
        hellos.serverNames.push(name);
        done(new Error('no certificate here'));
      },
    });
    server.on('connection', () => (hellos.connections += 1));
    server.on('tlsClientError', () => undefined);
    servers.push(server);
    return { server, hellos };
  };
  const listen = (server: Server, host: string, port: number): Promise<number> =>
    new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve((server.address() as { port: number }).port));
    });
  const close = async (): Promise<void> => {
    for (const s of servers) if (s.listening) await new Promise((done) => s.close(done));
  };

  const checked = listener();
  const other = listener();
  const otherV6 = createTcpServer((socket) => {
    other.hellos.connections += 1;
    socket.destroy();
  });
  servers.push(otherV6);
  const port = await listen(checked.server, '127.0.0.2', 0);
  try {
    await listen(other.server, '127.0.0.1', port);
    await listen(otherV6, '::1', port).catch((err: NodeJS.ErrnoException) => {
      // A machine without IPv6 loopback: the system's lookup cannot answer ::1 either.
      if (err.code !== 'EADDRNOTAVAIL' && err.code !== 'EAFNOSUPPORT') throw err;
    });
  } catch (err) {
    await close();
    // The port taken on the other loopback address: another one.
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE' && attempts > 1)
      return rebindingName(attempts - 1);
    throw err;
  }
  const policy = new EgressPolicy([{ host: 'localhost', port }], async (host) => {
    if (host !== 'localhost') throw new Error(`${host}: not in this test's DNS`);
    return [{ address: '127.0.0.2', family: 4 }];
  });
  return { port, policy, checked: checked.hellos, other: other.hellos, close };
}
