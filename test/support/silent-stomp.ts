import { Server, Socket, createServer } from 'node:net';

/**
 * A STOMP "broker" on loopback that logs every client in (CONNECTED) and then never says another
 * word: no receipts for the messages, none for the DISCONNECT. `frames` counts what it was sent.
 */
export class SilentStompBroker {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  readonly frames: Record<string, number> = {};
  port = 0;

  async start(): Promise<this> {
    this.server = createServer((s) => this.serve(s));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
    return this;
  }

  /** Connections still open. */
  get connections(): number {
    return this.sockets.size;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server?.close(r));
  }

  private serve(s: Socket): void {
    this.sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => this.sockets.delete(s));
    let buffered = '';
    s.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      const frames = buffered.split('\0');
      buffered = frames.pop() ?? '';
      for (const frame of frames) {
        const command = frame.replace(/^[\r\n]+/, '').split(/\r?\n/)[0];
        if (!command) continue;
        this.frames[command] = (this.frames[command] ?? 0) + 1;
        if (command === 'CONNECT' || command === 'STOMP')
          s.write('CONNECTED\nversion:1.2\nheart-beat:0,0\n\n\0');
      }
    });
  }
}
