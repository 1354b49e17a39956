import { splitHostPort, tcpExchange } from './tcp';

/** ApiVersions v0 request (api key 18): the first call every Kafka client makes. */
export function kafkaApiVersionsRequest(correlationId: number, clientId = 'tapyard-health'): Buffer {
  const client = Buffer.from(clientId, 'utf8');
  const body = Buffer.alloc(2 + 2 + 4 + 2 + client.length);
  body.writeInt16BE(18, 0);
  body.writeInt16BE(0, 2);
  body.writeInt32BE(correlationId, 4);
  body.writeInt16BE(client.length, 8);
  client.copy(body, 10);
  const size = Buffer.alloc(4);
  size.writeInt32BE(body.length, 0);
  return Buffer.concat([size, body]);
}

/** Checks a complete ApiVersions response: matching correlation id and error code 0. */
export function parseKafkaApiVersionsResponse(frame: Buffer, correlationId: number): void {
  if (frame.length < 10) throw new Error('short answer: not a Kafka broker');
  const got = frame.readInt32BE(4);
  if (got !== correlationId) throw new Error('answer does not match the request: not a Kafka broker');
  const errorCode = frame.readInt16BE(8);
  if (errorCode !== 0) throw new Error(`broker answered ApiVersions with error code ${errorCode}`);
}

export async function probeKafka(brokers: readonly string[], signal: AbortSignal): Promise<void> {
  const failures: string[] = [];
  for (const broker of brokers) {
    const { host, port } = splitHostPort(broker, 9092);
    const correlationId = Math.floor(Math.random() * 0x7fffffff);
    try {
      const frame = await tcpExchange(
        host,
        port,
        kafkaApiVersionsRequest(correlationId),
        (b) => b.length >= 4 && b.length >= 4 + b.readInt32BE(0),
        signal,
      );
      parseKafkaApiVersionsResponse(frame, correlationId);
      return;
    } catch (err) {
      failures.push(`${host}:${port}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  throw new Error(`no Kafka broker answered (${failures.join('; ')})`);
}
