import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, readlinkSync } from 'node:fs';
import { Queue, QueueEvents } from 'bullmq';
import { join } from 'node:path';
import { Client } from 'pg';
import { queuePrefix } from '@tapyard/core';
import { MaintenanceJob, PingResult, QUEUES } from '@tapyard/queue';
import { Cluster, startCluster } from './support/cluster';
import { testWorkerMain } from './support/processes';
import { HeldPing } from './support/test-worker';

const ADMIN_PASSWORD = randomBytes(12).toString('hex');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` until it returns a value other than undefined, at most `limitMs`. */
async function eventually<T>(what: string, limitMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const end = Date.now() + limitMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`${what}: not within ${limitMs} ms`);
    await sleep(200);
  }
}

/** Whether a process runs: a zombie (killed, not yet reaped by init) does not. */
const alive = (pid: number): boolean => {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0] !== 'Z';
  } catch {
    return false;
  }
};

/**
 * The harness of issue 25 (scale-out): the API and the workers on hosts of their own that share only the
 * services host's PostgreSQL, Redis and MinIO. Proves the harness (hosts, private disks, queue work across
 * hosts, host loss, a service restart), not the data paths.
 */
describe('cluster: API and workers on separate hosts (scripts/cluster)', () => {
  let cluster: Cluster;
  let session = { cookie: '', csrf: '' };
  let queue: Queue<HeldPing, PingResult>;
  let events: QueueEvents;

  const call = (method: string, path: string, body?: unknown): Promise<Response> =>
    fetch(`${cluster.apiUrl}${path}`, {
      method,
      headers: {
        cookie: session.cookie,
        'x-csrf-token': session.csrf,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });

  const ok = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await call(method, path, body);
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  };

  /** Pings through the cluster's queue; the worker pids that handled them. */
  const ping = async (count: number): Promise<number[]> => {
    const jobs = await queue.addBulk(
      Array.from({ length: count }, () => ({
        name: MaintenanceJob.ping,
        data: { requestedAt: Date.now(), holdMs: 150 },
      })),
    );
    const results = await Promise.all(jobs.map((j) => j.waitUntilFinished(events, 30_000)));
    return results.map((r) => r.workerPid);
  };

  beforeAll(async () => {
    cluster = await startCluster({
      workers: 2,
      // Pings held for their holdMs: a burst of them reaches every worker host.
      workerMain: testWorkerMain(),
      env: {
        LOG_LEVEL: 'debug',
        // One job at a time per worker: a burst of pings reaches every worker host.
        WORKER_CONCURRENCY: '1',
        TAP_SCHEDULER_MS: '200',
        // Tap runs in bubblewrap or not at all (the default, stated): nested in the hosts' own bwrap.
        TAP_SANDBOX: 'require',
        USE_USER_AUTH: 'true',
        TAPYARD_ADMIN_PASSWORD: ADMIN_PASSWORD,
        SHUTDOWN_GRACE_SECONDS: '5',
      },
    });
    const res = await fetch(`${cluster.apiUrl}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }),
    });
    expect(res.status).toBe(200);
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('tapyard_session=')) as string;
    session = { cookie: cookie.split(';')[0], csrf: ((await res.json()) as { csrfToken: string }).csrfToken };
    const opts = {
      connection: { url: cluster.services.redisUrl },
      prefix: queuePrefix(cluster.environment),
    };
    queue = new Queue(QUEUES.maintenance, opts);
    events = new QueueEvents(QUEUES.maintenance, opts);
    // Redis goes away on purpose below; both reconnect by themselves.
    queue.on('error', () => undefined);
    events.on('error', () => undefined);
    await events.waitUntilReady();
  }, 300_000);

  afterAll(async () => {
    await events?.close();
    await queue?.close();
    await cluster?.stop();
  }, 150_000);

  it('runs the API and two workers on hosts of their own, each with a private /tmp and data directory', async () => {
    expect(Object.keys(cluster.hosts)).toEqual(['api', 'w1', 'w2']);
    const apps = await Promise.all(['api', 'w1', 'w2'].map((h) => cluster.appPid(h)));
    const namespaces = apps.map((pid) => readlinkSync(`/proc/${pid}/ns/net`));
    // Three hosts, none of them this test's own network.
    expect(new Set([...namespaces, readlinkSync('/proc/self/ns/net')]).size).toBe(4);

    const mark = `private-${randomBytes(4).toString('hex')}`;
    const wrote = await cluster.exec('w1', [
      'sh',
      '-c',
      `echo x > /tmp/${mark} && echo x > /var/lib/tapyard/${mark}`,
    ]);
    expect(wrote).toMatchObject({ code: 0 });
    const seen = (host: string, path: string) => cluster.exec(host, ['test', '-e', path]);
    expect((await seen('w1', `/tmp/${mark}`)).code).toBe(0);
    expect((await seen('w1', `/var/lib/tapyard/${mark}`)).code).toBe(0);
    for (const host of ['api', 'w2']) {
      expect((await seen(host, `/tmp/${mark}`)).code).toBe(1);
      expect((await seen(host, `/var/lib/tapyard/${mark}`)).code).toBe(1);
    }
    // The running apps see the same: w1's worker has the file, w2's worker and the API do not.
    const [api, w1, w2] = apps;
    expect(existsSync(`/proc/${w1}/root/tmp/${mark}`)).toBe(true);
    expect(existsSync(`/proc/${w2}/root/tmp/${mark}`)).toBe(false);
    expect(existsSync(`/proc/${api}/root/var/lib/tapyard/${mark}`)).toBe(false);
    // Nor does any host see the cluster's directory, where the services host keeps its data.
    expect((await seen('api', cluster.dir)).code).toBe(1);
  });

  it('answers /health/services with postgres, redis, minio and pgvector of the services host', async () => {
    const health = await ok<Record<string, { status: string }>>('GET', '/health/services');
    for (const s of ['postgres', 'redis', 'minio', 'pgvector']) expect(health[s].status).toBe('up');
    expect(health.sandbox.status).toBe('up');
    // Servers listen in their hosts only: the services on the services host's address (MinIO also on
    // that namespace's own loopback), the API on its host's; none in this namespace on the cluster's subnet.
    const listening = (ns: string | null) =>
      execFileSync(ns ? 'nsenter' : 'ss', [...(ns ? [`--net=/run/netns/${ns}`, 'ss'] : []), '-Hltn'], {
        encoding: 'utf8',
      })
        .split('\n')
        .filter(Boolean)
        .map((l) => l.trim().split(/\s+/)[3]);
    const services = listening(`${cluster.name}-svc`);
    expect(services).toEqual(
      expect.arrayContaining([`${cluster.services.host}:5432`, `${cluster.services.host}:6379`]),
    );
    const own = (a: string) =>
      a.startsWith(`${cluster.services.host}:`) || /^(127\.0\.0\.1|\[::1\]):\d+$/.test(a);
    expect(services.filter((a) => !own(a))).toEqual([]);
    expect(listening(`${cluster.name}-api`)).toEqual([`${cluster.hosts.api.ip}:8080`]);
    const subnet = cluster.subnet.replace(/\.0\/24$/, '.');
    expect(listening(null).filter((a) => a.startsWith(subnet))).toEqual([]);
    // The database the apps use is the services host's own, on its veth address.
    const pg = new Client({ connectionString: cluster.services.databaseUrl });
    await pg.connect();
    try {
      const { rows } = await pg.query<{ addr: string }>('SELECT host(inet_server_addr()) AS addr');
      expect(rows[0].addr).toBe(cluster.services.host);
      const users = await pg.query(`SELECT 1 FROM tapyard.users WHERE username = 'admin'`);
      expect(users.rowCount).toBe(1);
    } finally {
      await pg.end();
    }
  });

  it('runs sandboxed taps nested in the hosts: a test on the API host, a schedule on a worker host', async () => {
    const test = await ok<{ isolation: string; records: { host: string }[] }>('POST', '/tap/test', {
      name: 'probe',
      script: 'import socket\ndef fetch():\n    yield {"host": socket.gethostname()}\n',
    });
    expect(test.isolation).toBe('bwrap');
    expect(test.records).toEqual([{ host: 'tapyard-sandbox' }]);

    await ok('POST', '/pipeline', {
      name: 'ticks',
      source: {
        fileAttributes: { format: 'csv' },
        schemaProperties: { fields: [{ name: 'n', type: 'int' }] },
      },
      destination: { database: { schema: 'public', table: 'ticks' } },
    });
    // No records: the run touches no spool, only the sandbox, Postgres and the object store (its script).
    await ok('POST', '/tap', {
      name: 'every_second',
      script: 'def fetch():\n    return []\n',
      targetPipeline: 'ticks',
      cronExpression: '* * * * * ?',
      enabled: true,
    });
    type Run = { trigger: string; status: string; error: unknown };
    const finished = await eventually('a finished scheduled run', 60_000, async () =>
      (await ok<Run[]>('GET', '/tap/runs?name=every_second')).find(
        (r) => r.trigger === 'schedule' && r.status !== 'running',
      ),
    );
    await ok('POST', '/tap', { name: 'every_second', enabled: false });
    expect(finished).toMatchObject({ status: 'success', error: null });
    const fired = ['w1', 'w2'].filter((h) => cluster.logs(h).includes('scheduled tap run finished'));
    expect(fired.length).toBeGreaterThan(0);
    expect(cluster.logs('api')).not.toContain('scheduled tap run finished');
  });

  it('shares the queue: pings through the services host, from here and from the API host, reach the worker hosts', async () => {
    const w1 = await cluster.appPid('w1');
    const w2 = await cluster.appPid('w2');
    expect(new Set(await ping(8))).toEqual(new Set([w1, w2]));

    // Sent from the API host itself, with the API's own REDIS_URL and environment.
    const fromApi = await cluster.exec('api', [
      process.execPath,
      '-e',
      `const { Queue, QueueEvents } = require(process.argv[1]);
       const opts = { connection: { url: process.env.REDIS_URL }, prefix: 'tapyard:' + process.env.TAPYARD_ENV };
       const queue = new Queue('${QUEUES.maintenance}', opts);
       const events = new QueueEvents('${QUEUES.maintenance}', opts);
       (async () => {
         await events.waitUntilReady();
         const job = await queue.add('${MaintenanceJob.ping}', { requestedAt: Date.now() });
         console.log(JSON.stringify(await job.waitUntilFinished(events, 90000)));
         await queue.close();
         await events.close();
       })();`,
      join(__dirname, '..', 'node_modules', 'bullmq'),
    ]);
    // Its error output shows in a failure (a CI run once saw code 1 alone).
    expect({ code: fromApi.code, stderr: fromApi.code === 0 ? '' : fromApi.stderr }).toEqual({
      code: 0,
      stderr: '',
    });
    expect([w1, w2]).toContain((JSON.parse(fromApi.stdout) as PingResult).workerPid);
  });

  it('a SIGKILLed worker host is gone at once; the other keeps serving, and a new host joins', async () => {
    const before = await cluster.pids('w1');
    const w2 = await cluster.appPid('w2');
    expect(before.length).toBeGreaterThan(0);
    await cluster.killHost('w1');
    expect(await cluster.pids('w1')).toEqual([]);
    expect(before.filter(alive)).toEqual([]);
    expect(new Set(await ping(4))).toEqual(new Set([w2]));

    const added = await cluster.startWorker();
    expect(added).toBe('w3');
    const w3 = await cluster.appPid('w3');
    expect(w3).not.toBeNull();
    // Once w3 consumes (its ready line comes before its first fetch), a burst reaches both hosts.
    await eventually('pings on w2 and w3', 60_000, async () => {
      const handled = new Set(await ping(6));
      return handled.has(w3 as number) && handled.has(w2 as number) ? handled : undefined;
    });
    expect((await cluster.refresh()).hosts.w1.running).toBe(false);
  });

  it('while Redis restarts, a session route answers 503 naming Redis, then recovers by itself', async () => {
    const pipelines = () => call('GET', '/pipelines');
    expect((await pipelines()).status).toBe(200);
    await cluster.restartService('redis', async () => {
      const res = await pipelines();
      expect(res.status).toBe(503);
      expect(((await res.json()) as { message: string }).message).toMatch(/redis/);
    });
    // No restart of the API: its Redis client reconnects, and the session (saved by Redis on shutdown) holds.
    await eventually('the API after Redis is back', 30_000, async () =>
      (await pipelines()).status === 200 ? true : undefined,
    );
    const w2 = await cluster.appPid('w2');
    await eventually('a worker after Redis is back', 60_000, async () =>
      (await ping(2)).includes(w2 as number) ? true : undefined,
    );
  });

  it('down leaves no namespace, link, process or directory behind', async () => {
    const name = cluster.name;
    const processes = (await Promise.all(['svc', 'api', 'w2', 'w3'].map((h) => cluster.pids(h)))).flat();
    expect(processes.length).toBeGreaterThan(0);
    await events.close();
    await queue.close();
    await cluster.stop();
    const netns = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });
    expect(netns.split('\n').filter((l) => l.startsWith(`${name}-`))).toEqual([]);
    const links = execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' });
    expect(links.split('\n').filter((l) => l.includes(` ${name}`))).toEqual([]);
    expect(processes.filter(alive)).toEqual([]);
    expect(existsSync(cluster.dir)).toBe(false);
  }, 150_000);

  it("the next up removes a crashed run's namespaces, links and processes (scripts/cluster reap)", async () => {
    // What a run killed before `down` leaves: a host's namespace with a process, its veth, the bridge.
    const name = `tyc${randomBytes(4).toString('hex').slice(0, 5)}`;
    const sh = (script: string) => execFileSync('sh', ['-c', script], { encoding: 'utf8' });
    sh(
      `ip netns add ${name}-w1 && ip link add ${name}b type bridge && ` +
        `ip link add ${name}v11 type veth peer name eth0 netns ${name}-w1`,
    );
    const stray = spawn('ip', ['netns', 'exec', `${name}-w1`, 'sleep', '600'], { stdio: 'ignore' });
    try {
      await eventually('the stray process in its namespace', 10_000, async () =>
        sh(`ip netns pids ${name}-w1`).trim() !== '' ? true : undefined,
      );
      execFileSync('bash', [join(__dirname, '..', 'scripts', 'cluster'), 'reap'], { timeout: 60_000 });
      expect(
        sh('ip netns list')
          .split('\n')
          .filter((l) => l.startsWith(`${name}-`)),
      ).toEqual([]);
      expect(sh('ip -o link show').includes(` ${name}`)).toBe(false);
      await eventually('the stray process gone', 10_000, async () =>
        alive(stray.pid as number) ? undefined : true,
      );
    } finally {
      stray.kill('SIGKILL');
      sh(`ip netns del ${name}-w1 2>/dev/null; ip link del ${name}b 2>/dev/null; true`);
    }
  });
});
