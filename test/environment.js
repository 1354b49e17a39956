/**
 * The e2e project's Jest environment: Node's, plus one duty at the end of each test file. Every e2e
 * suite makes fresh environments (uniqueEnvironment), and each app it starts makes that environment's
 * buckets in the shared object store. Left there, a run leaves thousands, and MinIO's CPU grows with
 * its bucket count (half a core at 8,000) until it slows the rest of the run. So once a file is done
 * (its apps closed by its own afterAll hooks) the buckets of the environments it made are removed, with
 * their objects, by MinIO's force delete. A bucket that cannot be removed is left to the next run's
 * sweep (test/global-setup.ts). Their Redis keys go too (test/support/redis-keys.js).
 */
const { TestEnvironment } = require('jest-environment-node');
const { forceRemoveBucket, storeClient } = require('./support/minio-buckets');
const { removeEnvironmentTopics } = require('./support/kafka-topics');
const { removeEnvironmentKeys } = require('./support/redis-keys');

class E2eEnvironment extends TestEnvironment {
  async teardown() {
    const made = this.global.__tapyardEnvironments;
    if (made && made.environments.length > 0) {
      // Likewise the Kafka topics of those environments, in a file that read any (support/kafka-topic.ts
      // names the broker): a partition left costs the broker CPU for as long as it runs.
      const kafka = this.global.__tapyardKafkaBrokers;
      await Promise.all([
        removeBuckets(made).catch(() => undefined),
        // And their Redis keys (queues with their kept jobs, sessions), and their tenants'.
        made.redis ? removeEnvironmentKeys(made.redis, made.environments).catch(() => undefined) : undefined,
        kafka ? removeEnvironmentTopics(kafka, made.environments).catch(() => undefined) : undefined,
      ]);
    }
    await super.teardown();
  }
}

async function removeBuckets({ store, environments }) {
  const client = storeClient(store);
  const prefixes = environments.map((e) => `${e}-`);
  const mine = (await client.listBuckets()).filter((b) => prefixes.some((p) => b.name.startsWith(p)));
  await Promise.all(mine.map((b) => forceRemoveBucket(client, b.name).catch(() => undefined)));
}

module.exports = E2eEnvironment;
