import { randomBytes } from 'node:crypto';
import { Admin, Producer, stringSerializers } from '@platformatic/kafka';
import { TEST_TOPIC, sweepStaleTestTopics } from './support/kafka-topics';
import { peerFields } from './support/vector-peers';

// The e2e project's Jest environment, loaded as Jest loads it (plain CommonJS).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const E2eEnvironment = require('./environment') as new (
  config: { globalConfig: object; projectConfig: object },
  context: object,
) => { global: Record<string, unknown>; setup(): Promise<void>; teardown(): Promise<void> };

describe('the Kafka topics of test runs', () => {
  let brokers: string;
  let admin: Admin;
  const id = randomBytes(4).toString('hex');
  const made: string[] = [];

  beforeAll(() => {
    brokers = peerFields('kafka').brokers;
    admin = new Admin({ clientId: 'tapyard-test', bootstrapBrokers: [brokers] });
  });
  afterAll(async () => {
    const left = (await admin.listTopics()).filter((t) => made.includes(t));
    if (left.length > 0) await admin.deleteTopics({ topics: left });
    await admin.close();
  });

  /** Makes each topic with one message written `ageMs` ago (the producer sets a record's time). */
  const write = async (topics: string[], ageMs = 0) => {
    made.push(...topics);
    const producer = new Producer({
      clientId: 'tapyard-test',
      bootstrapBrokers: [brokers],
      serializers: stringSerializers,
      autocreateTopics: true,
    });
    for (const topic of topics)
      await producer.send({ messages: [{ topic, value: '{}', timestamp: BigInt(Date.now() - ageMs) }] });
    await producer.close();
  };
  const existing = async () => {
    const topics = await admin.listTopics();
    return made.filter((t) => topics.includes(t));
  };

  it("deletes a file's topics when the file is done, and only the environments it made", async () => {
    const mine = [`t-a-${id}`, `t-b-${id}`];
    const other = `t-c-${id}`;
    await write([`ct.${mine[0]}.one`, `ct.${mine[0]}.two`, `fan.${mine[1]}.all`, `ct.${other}.one`]);
    const env = new E2eEnvironment(
      { globalConfig: {}, projectConfig: { testEnvironmentOptions: {}, globals: {} } },
      { console, docblockPragmas: {}, testPath: __filename },
    );
    await env.setup();
    // What a file's uniqueEnvironment and readTopic calls leave on its global.
    env.global.__tapyardEnvironments = { store: {}, environments: mine };
    env.global.__tapyardKafkaBrokers = brokers;
    await env.teardown();
    expect(await existing()).toEqual([`ct.${other}.one`]);
  });

  it('sweeps the test topics whose last message is older than the bound, never an empty or recent one', async () => {
    const old = `ct.t-old-${id}.x`;
    const recent = `ct.t-new-${id}.x`;
    const empty = `ct.t-nil-${id}.x`;
    const unrelated = `bench.t-old-${id}`;
    await write([old, unrelated], 4 * 3600_000);
    await write([recent]);
    await admin.createTopics({ topics: [empty] });
    made.push(empty);
    // The global setup's sweep with its own rule for test topics, over this test's topics only: on the
    // broker the whole suite shares, the sweep's time budget ran out in CI before it reached them.
    const swept = await sweepStaleTestTopics(brokers, {
      olderThanMs: 3 * 3600_000,
      budgetMs: 30_000,
      matches: (t) => t.includes(id) && TEST_TOPIC.test(t),
    });
    expect(swept.removed).toBe(1);
    // Deleting a topic completes on the broker after the answer: wait for it to leave the list (bounded).
    let left = await existing();
    for (let i = 0; i < 50 && left.includes(old); i++) {
      await new Promise((r) => setTimeout(r, 200));
      left = await existing();
    }
    expect(left).not.toContain(old);
    expect(left).toEqual(expect.arrayContaining([empty, recent, unrelated]));
  });
});
