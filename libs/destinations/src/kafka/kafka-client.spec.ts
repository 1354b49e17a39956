import { AddressInfo, Server, Socket, createServer } from 'node:net';
import { EgressPolicy, EgressRefused } from '@tapyard/egress';
import { kafkaOptions, kafkaSdk, kafkaSettings } from './kafka-client';

/** A loopback listener that only counts the connections it gets (it never answers). */
async function listener(): Promise<{ server: Server; port: number; connections: Socket[] }> {
  const connections: Socket[] = [];
  const server = createServer((s) => connections.push(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port, connections };
}

function chain(err: unknown, depth = 0): unknown[] {
  if (!err || depth > 6) return [];
  const inner = err instanceof AggregateError ? err.errors : [];
  return [
    err,
    ...inner.flatMap((e: unknown) => chain(e, depth + 1)),
    ...chain((err as Error).cause, depth + 1),
  ];
}

describe('the Kafka client of the sink', () => {
  let peer: Awaited<ReturnType<typeof listener>>;
  beforeEach(async () => {
    peer = await listener();
  });
  afterEach(async () => {
    for (const s of peer.connections) s.destroy();
    await new Promise((r) => peer.server.close(r));
  });

  it('never connects to a broker the egress policy refuses, and says why', async () => {
    const sdk = await kafkaSdk();
    const settings = kafkaSettings('k', { brokers: `127.0.0.1:${peer.port}` });
    const admin = new sdk.Admin(kafkaOptions(sdk, settings, new EgressPolicy([]), 'test', 500));
    try {
      const err = await admin.listTopics().then(
        () => null,
        (e: unknown) => e,
      );
      expect(chain(err).find((e) => e instanceof EgressRefused)).toBeDefined();
      expect(peer.connections).toHaveLength(0);
    } finally {
      await admin.close();
    }
  });

  it('connects to an allowed broker at the address the policy vetted', async () => {
    const sdk = await kafkaSdk();
    const settings = kafkaSettings('k', { brokers: `localhost:${peer.port}` });
    const policy = new EgressPolicy([{ host: 'localhost', port: peer.port }], async () => [
      { address: '127.0.0.1', family: 4 },
    ]);
    const admin = new sdk.Admin(kafkaOptions(sdk, settings, policy, 'test', 500));
    const asked = admin.listTopics().catch(() => undefined);
    try {
      for (let i = 0; i < 200 && peer.connections.length === 0; i++)
        await new Promise((r) => setTimeout(r, 25));
      expect(peer.connections.length).toBeGreaterThan(0);
    } finally {
      await admin.close();
      await asked;
    }
  });

  it('gives a broker that closes every connection up after (1 + retries)² connects: the retries nest', async () => {
    // The probe's one retry (kafka.destination.ts): 4 connects, where the delivery's three make 16.
    peer.server.on('connection', (s: Socket) => s.destroy());
    const sdk = await kafkaSdk();
    const settings = kafkaSettings('k', { brokers: `127.0.0.1:${peer.port}` });
    const policy = new EgressPolicy([{ host: '127.0.0.1', port: peer.port }]);
    const admin = new sdk.Admin(kafkaOptions(sdk, settings, policy, 'test', 5000, 1));
    try {
      const err = await admin.metadata({ topics: [] }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).not.toBeNull();
      expect(peer.connections).toHaveLength(4);
    } finally {
      await admin.close();
    }
  });

  it("names the secret's SASL mechanism as the client does", () => {
    expect(
      kafkaSettings('k', { brokers: 'b:9092', username: 'u', password: 'p', mechanism: 'scram-sha-512' })
        .sasl,
    ).toEqual({ mechanism: 'SCRAM-SHA-512', username: 'u', password: 'p' });
    expect(kafkaSettings('k', { brokers: 'b:9092', username: 'u' }).sasl?.mechanism).toBe('PLAIN');
    expect(() => kafkaSettings('k', { brokers: 'b:9092', mechanism: 'gssapi' })).toThrow(/mechanism must be/);
  });
});
