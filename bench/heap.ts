/**
 * A process's heap seen through its inspector (started with `--inspect=127.0.0.1:<port>`): a forced full
 * GC with the memory left after it, and heap snapshots written to disk. Used by `bench:uploads` to tell
 * memory the process still holds from memory the allocator has not given back.
 */
import { createWriteStream } from 'node:fs';

export interface HeapAfterGc {
  heapUsedMb: number;
  externalMb: number;
  arrayBuffersMb: number;
  rssMb: number;
}

type Message = {
  id?: number;
  method?: string;
  params?: { chunk?: string };
  result?: unknown;
  error?: unknown;
};

export class Inspector {
  private next = 0;
  private readonly pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  private chunk: ((c: string) => void) | undefined;

  private constructor(private readonly socket: WebSocket) {
    socket.addEventListener('message', (event: MessageEvent) => {
      const msg = JSON.parse(String(event.data)) as Message;
      if (msg.method === 'HeapProfiler.addHeapSnapshotChunk') this.chunk?.(msg.params?.chunk ?? '');
      const waiting = msg.id === undefined ? undefined : this.pending.get(msg.id);
      if (!waiting || msg.id === undefined) return;
      this.pending.delete(msg.id);
      if (msg.error) waiting.reject(new Error(JSON.stringify(msg.error)));
      else waiting.resolve(msg.result);
    });
  }

  /** Connects to the first target of the inspector listening on `port`, waiting for it to open. */
  static async connect(port: number): Promise<Inspector> {
    let targets: { webSocketDebuggerUrl: string }[] = [];
    for (let i = 0; i < 100 && targets.length === 0; i++) {
      try {
        targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as typeof targets;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    if (targets.length === 0) throw new Error(`no inspector on port ${port}`);
    const socket = new WebSocket(targets[0].webSocketDebuggerUrl);
    await new Promise<void>((resolve, reject) => {
      socket.addEventListener('open', () => resolve());
      socket.addEventListener('error', () => reject(new Error(`inspector on port ${port} refused`)));
    });
    return new Inspector(socket);
  }

  call<T>(method: string, params: object = {}): Promise<T> {
    const id = ++this.next;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.socket.send(JSON.stringify({ id, method, params }));
    });
  }

  /** Two full collections (the second frees what the first's weak callbacks let go), then the usage. */
  async heapAfterGc(): Promise<HeapAfterGc> {
    await this.call('HeapProfiler.collectGarbage');
    await this.call('HeapProfiler.collectGarbage');
    const { result } = await this.call<{ result: { value: string } }>('Runtime.evaluate', {
      expression: 'JSON.stringify(process.memoryUsage())',
    });
    const m = JSON.parse(result.value) as Record<string, number>;
    const mb = (n: number): number => n / 1048576;
    return {
      heapUsedMb: mb(m.heapUsed),
      externalMb: mb(m.external),
      arrayBuffersMb: mb(m.arrayBuffers),
      rssMb: mb(m.rss),
    };
  }

  /** Writes a heap snapshot (taken after a full GC) to `path`. */
  async snapshot(path: string): Promise<void> {
    const out = createWriteStream(path);
    this.chunk = (c) => out.write(c);
    try {
      await this.call('HeapProfiler.enable');
      await this.call('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
    } finally {
      this.chunk = undefined;
      await new Promise<void>((resolve, reject) =>
        out.end((err?: Error | null) => (err ? reject(err) : resolve())),
      );
    }
  }

  close(): void {
    this.socket.close();
  }
}
