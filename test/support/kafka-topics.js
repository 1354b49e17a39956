// The Kafka calls the test runs' topic clean-up makes, in plain CommonJS: the e2e Jest environment
// (test/environment.js) loads untransformed, and the global setup's sweep uses the same functions.
// Every partition a run leaves costs the broker for as long as it runs (checkpoints, ISR and retention
// checks walk them all), so a file's topics go when it is done and old ones at the next run's start.
const { Admin } = require('@platformatic/kafka');

/** Test topics: `<prefix>.<environment>.<name>`, the environment one of uniqueEnvironment's. */
const TEST_TOPIC = /^[a-z0-9]+\.(t-[a-z0-9-]+-[0-9a-f]{8})\./;

/** Runs `use` with an admin client that gives up quickly on a broker that is not there. */
async function withAdmin(brokers, use) {
  const admin = new Admin({
    clientId: 'tapyard-test-cleanup',
    bootstrapBrokers: [brokers],
    connectTimeout: 2000,
    retries: 1,
    timeout: 10_000,
  });
  try {
    return await use(admin);
  } finally {
    await admin.close();
  }
}

/** Deletes the test topics of these environments (those the file made); resolves with their names. */
function removeEnvironmentTopics(brokers, environments) {
  const mine = new Set(environments);
  return withAdmin(brokers, async (admin) => {
    const topics = (await admin.listTopics()).filter((t) => mine.has(TEST_TOPIC.exec(t)?.[1]));
    if (topics.length > 0) await admin.deleteTopics({ topics });
    return topics;
  });
}

/**
 * Each partition's offset for `timestamp`: -1n the end (the next offset to be written), else the first
 * offset of a record written at or after it (the end when there is none).
 */
async function offsetsAt(admin, topic, timestamp) {
  const metadata = await admin.metadata({ topics: [topic] });
  const count = metadata.topics.get(topic)?.partitionsCount ?? 0;
  const partitions = Array.from({ length: count }, (_, partitionIndex) => ({ partitionIndex, timestamp }));
  const [listed] = await admin.listOffsets({ topics: [{ name: topic, partitions }] });
  return new Map(listed.partitions.map((p) => [p.partitionIndex, p.offset]));
}

/**
 * Deletes test topics that hold messages and none written since `olderThanMs` ago: those of earlier
 * runs, never a live run's in another checkout sharing the broker (its topics get messages as its jobs
 * load; an empty one is left alone, since nothing tells its age). Bounded by `budgetMs`.
 */
function sweepStaleTestTopics(brokers, { olderThanMs, budgetMs, matches = (t) => TEST_TOPIC.test(t) }) {
  const deadline = Date.now() + budgetMs;
  return withAdmin(brokers, async (admin) => {
    const candidates = (await admin.listTopics()).filter(matches);
    const stale = [];
    for (const topic of candidates) {
      if (Date.now() > deadline) break;
      const high = await offsetsAt(admin, topic, -1n);
      if ([...high.values()].every((o) => o === 0n)) continue;
      const since = await offsetsAt(admin, topic, BigInt(Date.now() - olderThanMs));
      if ([...since].every(([p, o]) => o === -1n || o === high.get(p))) stale.push(topic);
    }
    if (stale.length > 0) await admin.deleteTopics({ topics: stale });
    return { removed: stale.length, left: candidates.length - stale.length };
  });
}

module.exports = { TEST_TOPIC, removeEnvironmentTopics, sweepStaleTestTopics };
