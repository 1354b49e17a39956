// The Redis clean-up of test and bench runs, in plain CommonJS: the e2e Jest environment
// (test/environment.js) loads untransformed, and the global setup's sweep and the benches use the same
// functions. Every environment keeps its keys under `tapyard:<environment>:` (queues, sessions, limits);
// left behind, BullMQ's kept jobs of thousands of runs made Redis hold 245 MB in 165,000 keys, and every
// RDB snapshot (scripts/services saves each minute under load) wrote all of it.
const Redis = require('ioredis');

/** Tenants a test names after its environment: two or three letters, then the environment's last 8 hex digits. */
const TENANT = /^[a-z]{2,3}[0-9a-f]{8}$/;
/** Test environments (uniqueEnvironment: `t-<label>-<8 hex>`) and their tenants. */
const TEST_ENVIRONMENT = /^t-[a-z0-9-]+-[0-9a-f]{8}$/;

function connect(url) {
  const redis = new Redis(url, { maxRetriesPerRequest: 1, connectTimeout: 2000 });
  redis.on('error', () => undefined);
  return redis;
}

/** Every key under `tapyard:<environment>:`, by environment, in one pass over the keyspace. */
async function keysByEnvironment(redis) {
  const found = new Map();
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', 'tapyard:*', 'COUNT', 2000);
    cursor = next;
    for (const key of keys) {
      const environment = /^tapyard:([^:]+):/.exec(key)?.[1];
      if (environment === undefined) continue;
      const list = found.get(environment);
      if (list) list.push(key);
      else found.set(environment, [key]);
    }
  } while (cursor !== '0');
  return found;
}

async function unlink(redis, keys) {
  for (let i = 0; i < keys.length; i += 500) await redis.unlink(...keys.slice(i, i + 500));
}

/**
 * Removes the keys of `environments` and of the tenants named after them. Resolves with how many keys
 * went.
 */
async function removeEnvironmentKeys(url, environments) {
  const names = new Set(environments);
  const tails = new Set(environments.map((e) => e.slice(-8)).filter((t) => /^[0-9a-f]{8}$/.test(t)));
  const mine = (e) => names.has(e) || (TENANT.test(e) && tails.has(e.slice(-8)));
  const redis = connect(url);
  try {
    const keys = [...(await keysByEnvironment(redis))].filter(([e]) => mine(e)).flatMap(([, k]) => k);
    await unlink(redis, keys);
    return keys.length;
  } finally {
    redis.disconnect();
  }
}

/**
 * How long ago the environment was last used, in ms: since its queues' newest event (BullMQ's event
 * streams are named by time, which survives a restart of Redis), or, without one, since its keys were
 * last touched (which a restart resets). An age, not a time: a wall clock set back a moment must not
 * make a key touched now read as touched later.
 */
async function age(redis, keys) {
  const streams = keys.filter((k) => k.endsWith(':events'));
  if (streams.length > 0) {
    const last = await Promise.all(streams.map((k) => redis.xrevrange(k, '+', '-', 'COUNT', 1)));
    const times = last.flat().map(([id]) => Number(id.split('-')[0]));
    if (times.length > 0) return Math.max(0, Date.now() - Math.max(...times));
  }
  const idle = await Promise.all(keys.map((k) => redis.object('IDLETIME', k)));
  return 1000 * Math.min(...idle.map((s) => (s === null ? 0 : Number(s))));
}

/**
 * Removes the keys of environments `matches` names that were last used `idleSeconds` ago or more (an
 * interrupted run's; a run in another checkout sharing this Redis uses its own): by default the test
 * environments and their tenants. Bounded in time: what is left goes on the next run.
 */
async function sweepIdleEnvironmentKeys(
  url,
  {
    idleSeconds = 3 * 3600,
    budgetMs = 30_000,
    matches = (e) => TEST_ENVIRONMENT.test(e) || TENANT.test(e),
  } = {},
) {
  const deadline = Date.now() + budgetMs;
  const redis = connect(url);
  let removed = 0;
  try {
    for (const [environment, keys] of await keysByEnvironment(redis)) {
      if (Date.now() > deadline) break;
      if (!matches(environment)) continue;
      if ((await age(redis, keys)) < idleSeconds * 1000) continue;
      await unlink(redis, keys);
      removed += keys.length;
    }
    return removed;
  } finally {
    redis.disconnect();
  }
}

module.exports = { removeEnvironmentKeys, sweepIdleEnvironmentKeys };
