import { randomBytes } from 'node:crypto';
import { Admin, Consumer, FetchIsolationLevels, stringDeserializers } from '@platformatic/kafka';

export interface TopicMessage {
  key: string | null;
  value: Record<string, unknown>;
  headers: Record<string, string>;
}

/** Each partition's end offset (the next offset to be written), by partition. */
async function endOffsets(admin: Admin, topic: string): Promise<bigint[]> {
  const metadata = await admin.metadata({ topics: [topic] });
  const count = metadata.topics.get(topic)?.partitionsCount ?? 0;
  const partitions = Array.from({ length: count }, (_, partitionIndex) => ({
    partitionIndex,
    timestamp: -1n,
  }));
  const [listed] = await admin.listOffsets({ topics: [{ name: topic, partitions }] });
  return listed.partitions.sort((a, b) => a.partitionIndex - b.partitionIndex).map((p) => p.offset);
}

/**
 * Every committed message of a topic, read from the beginning by a fresh read_committed consumer,
 * up to the end offsets the topic has when called (the jobs that wrote it have ended): the read ends
 * when it reaches them, not after a quiet moment.
 */
export async function readTopic(brokers: string, topic: string): Promise<TopicMessage[]> {
  // The e2e environment (test/environment.js) deletes the topics of this file's environments at its end.
  (globalThis as { __tapyardKafkaBrokers?: string }).__tapyardKafkaBrokers = brokers;
  const admin = new Admin({ clientId: 'tapyard-test', bootstrapBrokers: [brokers] });
  let ends: bigint[] = [];
  try {
    if ((await admin.listTopics()).includes(topic)) ends = await endOffsets(admin, topic);
  } finally {
    await admin.close();
  }
  if (ends.every((o) => o === 0n)) return [];
  const consumer = new Consumer({
    clientId: 'tapyard-test',
    groupId: `test-${randomBytes(6).toString('hex')}`,
    bootstrapBrokers: [brokers],
    isolationLevel: FetchIsolationLevels.READ_COMMITTED,
    // A fetch waits this long for more data before answering with what there is.
    maxWaitTime: 100,
    deserializers: stringDeserializers,
  });
  const out: TopicMessage[] = [];
  try {
    const stream = await consumer.consume({ topics: [topic], mode: 'earliest', autocommit: false });
    stream.on('data', (message) => {
      out.push({
        key: message.key ? message.key : null,
        value: JSON.parse(message.value) as Record<string, unknown>,
        headers: Object.fromEntries(message.headers),
      });
    });
    // The next offset the stream fetches per partition counts transaction markers and aborted records too.
    const reached = () => ends.every((end, p) => (stream.offsetsToFetch.get(`${topic}:${p}`) ?? -1n) >= end);
    const deadline = Date.now() + 60_000;
    while (!reached()) {
      if (Date.now() > deadline) throw new Error(`${topic} not read to its end offsets ${ends.join(',')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    await stream.close();
  } finally {
    await consumer.close(true);
  }
  return out;
}
