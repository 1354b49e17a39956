// The Kafka calls the test runs' topic clean-up makes, in plain CommonJS: the e2e Jest environment
// (test/environment.js) loads untransformed, and the global setup's sweep uses the same functions.
// Every partition a run leaves costs the broker for as long as it runs (checkpoints, ISR and retention
// checks walk them all), so a file's topics go when it is done and old ones at the next run's start.
const { Kafka, logLevel } = require('kafkajs');

/** Test topics: `<prefix>.<environment>.<name>`, the environment one of uniqueEnvironment's. */
const TEST_TOPIC = /^[a-z0-9]+\.(t-[a-z0-9-]+-[0-9a-f]{8})\./;

/** Runs `use` with a connected admin client that gives up quickly on a broker that is not there. */
async function withAdmin(brokers, use) {
  const kafka = new Kafka({
    clientId: 'tapyard-test-cleanup',
    brokers: [brokers],
    logLevel: logLevel.NOTHING,
    connectionTimeout: 2000,
    retry: { retries: 1 },
  });
  const admin = kafka.admin();
  await admin.connect();
  try {
    return await use(admin);
  } finally {
    await admin.disconnect();
  }
}

/** Deletes the test topics of these environments (those the file made); resolves with their names. */
function removeEnvironmentTopics(brokers, environments) {
  const mine = new Set(environments);
  return withAdmin(brokers, async (admin) => {
    const topics = (await admin.listTopics()).filter((t) => mine.has(TEST_TOPIC.exec(t)?.[1]));
    if (topics.length > 0) await admin.deleteTopics({ topics, timeout: 10_000 });
    return topics;
  });
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
      const high = await admin.fetchTopicOffsets(topic);
      if (high.every((p) => p.high === '0')) continue;
      // The first offset at or after the cutoff: the end of the partition when nothing is that recent.
      const since = await admin.fetchTopicOffsetsByTimestamp(topic, Date.now() - olderThanMs);
      if (since.every((p) => p.offset === high.find((h) => h.partition === p.partition)?.high))
        stale.push(topic);
    }
    if (stale.length > 0) await admin.deleteTopics({ topics: stale, timeout: 10_000 });
    return { removed: stale.length, left: candidates.length - stale.length };
  });
}

module.exports = { removeEnvironmentTopics, sweepStaleTestTopics };
