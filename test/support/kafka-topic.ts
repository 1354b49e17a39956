import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';

export interface TopicMessage {
  key: string | null;
  value: Record<string, unknown>;
  headers: Record<string, string>;
}

/**
 * Every committed message of a topic, read from the beginning by a fresh read_committed consumer,
 * up to the end offsets the topic has when called (the jobs that wrote it have ended): the read ends
 * when it reaches them, not after a quiet moment.
 */
export async function readTopic(brokers: string, topic: string): Promise<TopicMessage[]> {
  // The e2e environment (test/environment.js) deletes the topics of this file's environments at its end.
  (globalThis as { __tapyardKafkaBrokers?: string }).__tapyardKafkaBrokers = brokers;
  const kafka = new Kafka({ clientId: 'tapyard-test', brokers: [brokers], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const exists = (await admin.listTopics()).includes(topic);
  const ends = exists ? await admin.fetchTopicOffsets(topic) : [];
  await admin.disconnect();
  if (!exists || ends.every((p) => p.high === '0')) return [];
  // A fetch waits this long for more data, and disconnecting waits for the fetch (5 s by default).
  const consumer = kafka.consumer({
    groupId: `test-${randomBytes(6).toString('hex')}`,
    readUncommitted: false,
    maxWaitTimeInMs: 100,
  });
  const out: TopicMessage[] = [];
  // The last offset consumed per partition, transaction markers and aborted records included: kafkajs
  // reports a batch of those too (END_BATCH_PROCESS), after the messages of a batch were handled.
  const reached = new Map<number, number>();
  consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
    reached.set(
      payload.partition,
      Math.max(reached.get(payload.partition) ?? -1, Number(payload.lastOffset)),
    );
  });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        out.push({
          key: message.key ? String(message.key) : null,
          value: JSON.parse(String(message.value)) as Record<string, unknown>,
          headers: Object.fromEntries(Object.entries(message.headers ?? {}).map(([k, v]) => [k, String(v)])),
        });
      },
    });
    const deadline = Date.now() + 60_000;
    while (!ends.every((p) => (reached.get(p.partition) ?? -1) >= Number(p.high) - 1)) {
      if (Date.now() > deadline)
        throw new Error(`${topic} not read to its end offsets ${JSON.stringify(ends)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await consumer.disconnect();
  }
  return out;
}
