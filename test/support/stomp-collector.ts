import { randomUUID } from 'node:crypto';
import { Client, IMessage } from '@stomp/stompjs';
import { TCPWrapper } from '@stomp/tcp-wrapper';

/** The header of the markers `settled` sends through the queue. */
const MARKER = 'tapyard-test-marker';

/**
 * A STOMP consumer for tests: subscribes to a (wildcard) destination on the local ActiveMQ and keeps
 * each message body once per `tapyard-message-id` (the deduplication the sink's guarantee asks of
 * consumers), grouped by the destination it arrived on.
 */
export class StompCollector {
  private readonly byDestination = new Map<string, Map<string, Record<string, unknown>>>();
  /** Markers sent by `settled`, by id: called when the marker comes back. */
  private readonly markers = new Map<string, () => void>();
  /** The waits of `settled` still running: `close` ends them, so none outlives its test file. */
  private readonly waits = new Set<{ timer: NodeJS.Timeout; reject: (err: Error) => void }>();

  private constructor(private readonly client: Client) {}

  static async open(fields: Record<string, string>, pattern: string): Promise<StompCollector> {
    const u = new URL(fields.url);
    const client = new Client({
      webSocketFactory: () => new TCPWrapper(u.hostname, Number(u.port)),
      connectHeaders: { login: fields.username, passcode: fields.password },
      reconnectDelay: 0,
      heartbeatIncoming: 0,
      heartbeatOutgoing: 0,
      debug: () => undefined,
    });
    const collector = new StompCollector(client);
    await new Promise<void>((resolve, reject) => {
      client.onConnect = () => resolve();
      client.onStompError = (f) => reject(new Error(f.headers.message));
      client.activate();
    });
    client.subscribe(pattern, (m: IMessage) => collector.take(m));
    return collector;
  }

  private take(m: IMessage): void {
    const marker = m.headers[MARKER];
    if (marker !== undefined) return this.markers.get(marker)?.();
    const dest = m.headers.destination;
    const id = m.headers['tapyard-message-id'] ?? m.headers['message-id'];
    const map = this.byDestination.get(dest) ?? new Map<string, Record<string, unknown>>();
    map.set(id, JSON.parse(m.body) as Record<string, unknown>);
    this.byDestination.set(dest, map);
  }

  /**
   * The bodies received on `destination`, once every message the broker held for it when called has
   * arrived: a marker sent now is queued behind them, and a queue's one consumer gets its messages in
   * order. (The sink awaits the broker's receipt for each message, so a job that has ended has all of
   * its messages in the queue.)
   */
  async settled(destination: string, timeoutMs = 60_000): Promise<Record<string, unknown>[]> {
    const id = randomUUID();
    let wait: { timer: NodeJS.Timeout; reject: (err: Error) => void } | undefined;
    const back = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no marker back from ${destination} in ${timeoutMs} ms`)),
        timeoutMs,
      );
      wait = { timer, reject };
      this.waits.add(wait);
      this.markers.set(id, resolve);
    });
    this.client.publish({ destination, body: '{}', headers: { [MARKER]: id } });
    try {
      await back;
    } finally {
      if (wait) {
        clearTimeout(wait.timer);
        this.waits.delete(wait);
      }
      this.markers.delete(id);
    }
    return [...(this.byDestination.get(destination)?.values() ?? [])];
  }

  async close(): Promise<void> {
    for (const w of this.waits) {
      clearTimeout(w.timer);
      w.reject(new Error('the collector was closed while waiting for a marker'));
    }
    this.waits.clear();
    await this.client.deactivate();
  }
}
