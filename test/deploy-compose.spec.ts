import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CORE_SCHEMA, load, mergeTag } from 'js-yaml';

/**
 * docker/compose.yaml describes the scale-out shape (API and worker replicas sharing only PostgreSQL, Redis
 * and the object store). There is no Docker engine on the development machines, so the file is checked as
 * data: what an engine would do with it follows from these fields.
 */
const dockerDir = join(__dirname, '..', 'docker');
const composeText = readFileSync(join(dockerDir, 'compose.yaml'), 'utf8');

interface Service {
  image?: string;
  command?: string[];
  environment?: Record<string, string | number | boolean>;
  volumes?: unknown[];
  volumes_from?: unknown[];
  privileged?: boolean;
  cap_add?: string[];
  security_opt?: string[];
  ports?: string[];
  healthcheck?: { test: string[] };
  stop_grace_period?: string;
  deploy?: { replicas?: number };
  depends_on?: Record<string, unknown>;
}
// Compose reads YAML merge keys (`<<: *tapyard-env`).
const composeSchema = CORE_SCHEMA.withTags(mergeTag);
const compose = load(composeText, { schema: composeSchema }) as { services: Record<string, Service> };
const { api, worker, lb } = compose.services;
const apps: Array<[string, Service]> = [
  ['api', api],
  ['worker', worker],
];

function seconds(duration: string | undefined): number {
  const m = /^(\d+)(s|m)$/.exec(duration ?? '');
  if (!m) throw new Error(`not a duration compose reads: ${duration}`);
  return Number(m[1]) * (m[2] === 'm' ? 60 : 1);
}

describe('docker/compose.yaml: API and worker replicas', () => {
  it.each(apps)('%s runs two replicas', (_name, service) => {
    expect(service.deploy?.replicas).toBe(2);
  });

  it.each(apps)(
    '%s mounts no volume (replicas of a service would share it; replicas may be on other hosts)',
    (_name, service) => {
      expect(service.volumes ?? []).toEqual([]);
      expect(service.volumes_from ?? []).toEqual([]);
    },
  );

  it('no environment variable points an app at a local spool directory', () => {
    for (const [, service] of apps)
      expect(Object.keys(service.environment ?? {})).not.toContain('TAPYARD_SPOOL_DIR');
  });

  it('the worker serves its probes on every interface, on the port its healthcheck asks', () => {
    expect(worker.environment?.WORKER_HTTP_HOST).toBe('0.0.0.0');
    const port = String(worker.environment?.WORKER_HTTP_PORT);
    expect(worker.healthcheck?.test.join(' ')).toContain(`127.0.0.1:${port}/readyz`);
  });

  it("the worker's command gives it 32 MB semi-spaces over the image's 8 MB (a command-line flag wins over NODE_OPTIONS)", () => {
    const dockerfile = readFileSync(join(dockerDir, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/NODE_OPTIONS=--max-semi-space-size=8\b/);
    expect(worker.command?.slice(0, 2)).toEqual(['node', '--max-semi-space-size=32']);
    expect(api.command ?? []).not.toContain('--max-semi-space-size=32');
  });

  it('the API healthcheck asks its readiness route on its port', () => {
    expect(api.healthcheck?.test.join(' ')).toContain('127.0.0.1:8080/readyz');
  });

  it.each(apps)('%s is given more time to stop than its own shutdown grace', (_name, service) => {
    const grace = Number(service.environment?.SHUTDOWN_GRACE_SECONDS);
    expect(grace).toBeGreaterThan(0);
    expect(seconds(service.stop_grace_period)).toBeGreaterThanOrEqual(grace + 5);
  });

  it.each(apps)(
    '%s runs the sandbox unprivileged, with the namespaces and /proc bubblewrap needs',
    (_name, service) => {
      expect(service.privileged).toBeUndefined();
      expect(service.cap_add).toBeUndefined();
      expect(service.security_opt).toEqual(
        expect.arrayContaining(['seccomp=unconfined', 'apparmor=unconfined', 'systempaths=unconfined']),
      );
    },
  );

  it('only the load balancer publishes a port, on loopback', () => {
    const published = Object.entries(compose.services).filter(([, s]) => (s.ports ?? []).length > 0);
    expect(published.map(([name]) => name)).toEqual(['lb']);
    expect(lb.ports).toEqual(['127.0.0.1:8080:8080']);
    expect(lb.depends_on).toHaveProperty('api');
  });

  it('the load balancer proxies to every API replica and does not buffer event streams', () => {
    const conf = readFileSync(join(dockerDir, 'nginx.conf'), 'utf8');
    const mount = (lb.volumes ?? []).map(String);
    expect(mount).toContain('./nginx.conf:/etc/nginx/nginx.conf:ro');
    expect(conf).toMatch(/server api:8080 resolve;/);
    expect(conf).toMatch(/proxy_buffering off;/);
    const timeout = /proxy_read_timeout (\d+)(s|m|h);/.exec(conf);
    expect(timeout).not.toBeNull();
    const [, n, unit] = timeout as RegExpExecArray;
    expect(Number(n) * { s: 1, m: 60, h: 3600 }[unit as 's' | 'm' | 'h']).toBeGreaterThanOrEqual(600);
  });

  it('every password and key the apps need has no default: the stack does not start without it', () => {
    const required = new Set([...composeText.matchAll(/\$\{([A-Z0-9_]+):\?[^}]+\}/g)].map((m) => m[1]));
    expect([...required].sort()).toEqual(
      [
        'MINIO_ROOT_PASSWORD',
        'POSTGRES_PASSWORD',
        'REDIS_PASSWORD',
        'TAPYARD_DB_PASSWORD',
        'TAPYARD_MASTER_KEY',
      ].sort(),
    );
    const raw = load(composeText, { schema: composeSchema }) as { 'x-tapyard-env': Record<string, string> };
    const env = raw['x-tapyard-env'];
    expect(env.TAPYARD_MASTER_KEY).toMatch(/^\$\{TAPYARD_MASTER_KEY:\?/);
    expect(env.DATABASE_URL).toContain('${TAPYARD_DB_PASSWORD:?');
    expect(env.REDIS_URL).toContain('${REDIS_PASSWORD:?');
    expect(env.OBJECT_STORE_SECRET_KEY).toMatch(/^\$\{MINIO_ROOT_PASSWORD:\?/);
    // Both apps take the whole shared block: one master key for every process.
    for (const [, service] of apps) {
      for (const key of Object.keys(env)) expect(service.environment).toHaveProperty(key, env[key]);
    }
    // A bare `${VAR}` would start with an empty value, unless the file requires the same variable elsewhere.
    const bare = [...composeText.matchAll(/\$\{([A-Z0-9_]+)\}/g)].map((m) => m[1]);
    for (const name of bare) expect(required).toContain(name);
  });
});

describe('docker/Dockerfile: the build stage has what `npm run build` reads', () => {
  // No engine here to build the image: the build stage's COPY lines are checked against what the
  // build script reads (scripts/build sources scripts/lib; the console is under apps/).
  const dockerfile = readFileSync(join(dockerDir, 'Dockerfile'), 'utf8');
  const buildStage = dockerfile.slice(0, dockerfile.indexOf('RUN npm run build'));
  const copied = [...buildStage.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1].split(/\s+/));

  it('copies the sources, the compiler settings and the build scripts before building', () => {
    expect(buildStage.length).toBeGreaterThan(0);
    for (const needed of [
      'package.json',
      'package-lock.json',
      'tsconfig.json',
      'tsconfig.build.json',
      'apps',
      'libs',
      'scripts',
    ])
      expect(copied).toContain(needed);
  });
});
