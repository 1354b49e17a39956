import { Client, IMessage } from '@stomp/stompjs';
import { TCPWrapper } from '@stomp/tcp-wrapper';

/**
 * A STOMP consumer for tests: subscribes to a (wildcard) destination on the local ActiveMQ and keeps
 * each message body once per `tapyard-message-id` (the deduplication the sink's guarantee asks of
 * consumers), grouped by the destination it arrived on.
 */
export class StompCollector {
  private readonly byDestination = new Map<string, Map<string, Record<string, unknown>>>();
  private lastAt = Date.now();

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
    const dest = m.headers.destination;
    const id = m.headers['tapyard-message-id'] ?? m.headers['message-id'];
    const map = this.byDestination.get(dest) ?? new Map<string, Record<string, unknown>>();
    map.set(id, JSON.parse(m.body) as Record<string, unknown>);
    this.byDestination.set(dest, map);
    this.lastAt = Date.now();
  }

  /** The bodies received on `destination` once nothing new arrived for a moment. */
  async settled(destination: string, quietMs = 700): Promise<Record<string, unknown>[]> {
    await new Promise((r) => setTimeout(r, quietMs));
    while (Date.now() - this.lastAt < quietMs) await new Promise((r) => setTimeout(r, 100));
    return [...(this.byDestination.get(destination)?.values() ?? [])];
  }

  async close(): Promise<void> {
    await this.client.deactivate();
  }
}
