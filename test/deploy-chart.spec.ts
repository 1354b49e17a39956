import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAll } from 'js-yaml';

/**
 * The Helm chart in deploy/helm/tapyard: `helm lint`, `helm template`, and every rendered manifest checked
 * against the Kubernetes API's own JSON schemas in their strict form (an unknown field is an error), for the
 * oldest and newest Kubernetes versions the chart claims. The tools come from `scripts/services up helm`
 * (helm from the Go proxy, schemas from PyPI's kubernetes-validate), installed once under ~/.cache/tapyard.
 */
const root = join(__dirname, '..');
const chart = join(root, 'deploy', 'helm', 'tapyard');
const KUBE_VERSIONS = ['1.33.0', '1.37.0'];

interface Tools {
  helm: string;
  kubernetesValidate: string;
}

function installTools(): Tools | string {
  const up = spawnSync('bash', [join(root, 'scripts', 'services'), 'up', 'helm'], {
    encoding: 'utf8',
    timeout: 20 * 60_000,
  });
  const last = up.stdout?.trim().split('\n').pop() ?? '';
  if (up.status !== 0 || !last.startsWith('{')) {
    const why =
      (up.stderr ?? '').trim().split('\n').slice(-3).join(' | ') || up.error?.message || `exit ${up.status}`;
    return `scripts/services up helm could not install the chart tools: ${why}`;
  }
  return JSON.parse(last) as Tools;
}

const installed = installTools();
const tools = typeof installed === 'string' ? undefined : installed;
if (typeof installed === 'string') {
  // The one reason these tests may not run; printed so that a skipped suite is never silent.
  console.warn(`SKIPPED deploy/helm chart checks: ${installed}`);
}
const describeWithTools = tools ? describe : describe.skip;

const required = {
  'secrets.masterKey': 'ab'.repeat(32),
  'secrets.databaseUrl': 'postgres://tapyard:pw@postgres:5432/tapyard',
  'secrets.redisUrl': 'redis://:pw@redis:6379',
  'secrets.objectStoreAccessKey': 'tapyard',
  'secrets.objectStoreSecretKey': 'object-store-secret',
  'secrets.bootstrapApiKey': 'bootstrap-key-of-24-characters',
  'objectStore.endpoint': 'http://minio:9000',
};

function setArgs(values: Record<string, string>): string[] {
  return Object.entries(values).flatMap(([k, v]) => ['--set-string', `${k}=${v}`]);
}

function helm(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(tools!.helm, args, { encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Renders the chart; the values are --set-string pairs, --set for typed ones (`extra`). */
function render(values: Record<string, string> = required, extra: string[] = []): string {
  const r = helm([
    'template',
    'rel',
    chart,
    '--kube-version',
    KUBE_VERSIONS[0],
    ...setArgs(values),
    ...extra,
  ]);
  if (r.status !== 0) throw new Error(`helm template failed: ${r.stderr}`);
  return r.stdout;
}

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  spec?: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

function manifests(yaml: string): Manifest[] {
  return (loadAll(yaml) as Array<Manifest | null>).filter((m): m is Manifest => m !== null);
}

/**
 * Checks every manifest of `yaml` against the strict schemas of each version. Returns the problems: a
 * manifest that does not validate, and one whose kind has no schema (kubernetes-validate only warns about
 * that), unless its kind is listed in `unschematised`.
 */
function validate(yaml: string, unschematised: string[] = []): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'tapyard-chart-'));
  try {
    const file = join(dir, 'rendered.yaml');
    writeFileSync(file, yaml);
    const args = ['--strict', ...KUBE_VERSIONS.flatMap((v) => ['-k', v]), file];
    const r = spawnSync(tools!.kubernetesValidate, args, { encoding: 'utf8', timeout: 120_000 });
    const lines = `${r.stdout}\n${r.stderr}`.split('\n').filter((l) => l.trim() !== '');
    const problems = lines.filter(
      (l) =>
        !l.startsWith('INFO ') && !unschematised.some((kind) => l.includes(`find schema for kind ${kind} `)),
    );
    if (r.status !== 0 && problems.length === 0) problems.push(`kubernetes-validate exited ${r.status}`);
    return problems;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function find(all: Manifest[], kind: string, name: string): Manifest {
  const m = all.find((x) => x.kind === kind && x.metadata.name === name);
  if (!m)
    throw new Error(`no ${kind} ${name} in ${all.map((x) => `${x.kind}/${x.metadata.name}`).join(', ')}`);
  return m;
}

describeWithTools('deploy/helm/tapyard', () => {
  it('passes helm lint --strict for each Kubernetes version it claims', () => {
    for (const version of KUBE_VERSIONS) {
      const r = helm(['lint', '--strict', chart, '--kube-version', version, ...setArgs(required)]);
      expect({ version, status: r.status, out: r.stdout + r.stderr }).toMatchObject({ status: 0 });
    }
  });

  it('renders manifests that the strict Kubernetes schemas accept', () => {
    const yaml = render();
    expect(validate(yaml)).toEqual([]);
    const kinds = manifests(yaml)
      .map((m) => `${m.kind}/${m.metadata.name}`)
      .sort();
    expect(kinds).toEqual(
      [
        'ConfigMap/rel-tapyard-config',
        'Deployment/rel-tapyard-api',
        'Deployment/rel-tapyard-worker',
        'PodDisruptionBudget/rel-tapyard-api',
        'PodDisruptionBudget/rel-tapyard-worker',
        'Secret/rel-tapyard-env',
        'Service/rel-tapyard-api',
        'Service/rel-tapyard-worker',
      ].sort(),
    );
  });

  it('the check fails on a wrong manifest: a misspelled field, a wrong type, an unknown API version', () => {
    const yaml = render();
    const misspelled = validate(yaml.replace(/readinessProbe:/g, 'readynessProbe:'));
    expect(misspelled.join('\n')).toMatch(/deployment\/rel-tapyard-api .*'readynessProbe' was unexpected/);
    const wrongType = validate(
      yaml.replace('terminationGracePeriodSeconds: 45', 'terminationGracePeriodSeconds: soon'),
    );
    expect(wrongType.join('\n')).toMatch(/terminationGracePeriodSeconds/);
    const unknownVersion = validate(yaml.replace('apiVersion: policy/v1', 'apiVersion: policy/v2'));
    expect(unknownVersion.join('\n')).toMatch(/PodDisruptionBudget with api version policy\/v2/);
  });

  it('API and worker: replicas, probe routes, ports, shutdown grace, nothing shared but the Secret and ConfigMap', () => {
    const all = manifests(render());
    const config = find(all, 'ConfigMap', 'rel-tapyard-config').data!;
    expect(config).toMatchObject({ HOST: '0.0.0.0', WORKER_HTTP_HOST: '0.0.0.0', WORKER_HTTP_PORT: '8081' });
    const grace = Number(config.SHUTDOWN_GRACE_SECONDS);
    for (const [name, port] of [
      ['api', 8080],
      ['worker', 8081],
    ] as const) {
      const pod = find(all, 'Deployment', `rel-tapyard-${name}`).spec!;
      expect(pod.replicas).toBe(2);
      const spec = pod.template.spec;
      const [container] = spec.containers;
      expect(container.ports).toEqual([{ name: 'http', containerPort: port }]);
      expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });
      expect(container.livenessProbe.httpGet).toEqual({ path: '/livez', port: 'http' });
      expect(spec.terminationGracePeriodSeconds).toBeGreaterThan(grace);
      expect(container.envFrom).toEqual([
        { configMapRef: { name: 'rel-tapyard-config' } },
        { secretRef: { name: 'rel-tapyard-env' } },
      ]);
      // Only volumes of the pod's own: no claim or host path that replicas would share.
      for (const volume of spec.volumes) expect(Object.keys(volume).sort()).toEqual(['emptyDir', 'name']);
      expect(container.resources.requests).toBeDefined();
      // The worker's young generation: 32 MB semi-spaces on its command line (the image's NODE_OPTIONS: 8).
      expect(container.command.includes('--max-semi-space-size=32')).toBe(name === 'worker');
      expect(container.resources.limits).toBeDefined();
      const pdb = find(all, 'PodDisruptionBudget', `rel-tapyard-${name}`).spec!;
      expect(pdb.minAvailable).toBe(1);
      expect(pdb.selector.matchLabels).toEqual(pod.selector.matchLabels);
    }
    const secret = find(all, 'Secret', 'rel-tapyard-env').stringData!;
    expect(Object.keys(secret).sort()).toEqual(
      [
        'DATABASE_URL',
        'OBJECT_STORE_ACCESS_KEY',
        'OBJECT_STORE_SECRET_KEY',
        'REDIS_URL',
        'TAPYARD_BOOTSTRAP_API_KEY',
        'TAPYARD_MASTER_KEY',
      ].sort(),
    );
    // Secrets stay out of the ConfigMap.
    expect(JSON.stringify(config)).not.toContain(required['secrets.objectStoreSecretKey']);
  });

  it('the sandbox: unconfined seccomp and AppArmor, an unmasked /proc in a pod user namespace, never privileged', () => {
    const all = manifests(render());
    for (const name of ['api', 'worker']) {
      const spec = find(all, 'Deployment', `rel-tapyard-${name}`).spec!.template.spec;
      expect(spec.hostUsers).toBe(false);
      expect(spec.automountServiceAccountToken).toBe(false);
      expect(spec.securityContext).toMatchObject({
        runAsNonRoot: true,
        runAsUser: 10001,
        seccompProfile: { type: 'Unconfined' },
        appArmorProfile: { type: 'Unconfined' },
      });
      expect(spec.containers[0].securityContext).toEqual({
        privileged: false,
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
        procMount: 'Unmasked',
      });
    }
    // Without pod user namespaces on the nodes: no unmasked /proc (Kubernetes refuses it outside one).
    const plain = render(required, ['--set', 'sandbox.userNamespace=false']);
    expect(validate(plain)).toEqual([]);
    const spec = find(manifests(plain), 'Deployment', 'rel-tapyard-worker').spec!.template.spec;
    expect(spec.hostUsers).toBeUndefined();
    expect(spec.containers[0].securityContext.procMount).toBeUndefined();
  });

  it('existingSecret: no Secret rendered, both apps read the named one', () => {
    const yaml = render({ 'objectStore.endpoint': 'http://minio:9000', existingSecret: 'tapyard-prod' });
    expect(validate(yaml)).toEqual([]);
    const all = manifests(yaml);
    expect(all.filter((m) => m.kind === 'Secret')).toEqual([]);
    for (const name of ['api', 'worker']) {
      const [container] = find(all, 'Deployment', `rel-tapyard-${name}`).spec!.template.spec.containers;
      expect(container.envFrom).toContainEqual({ secretRef: { name: 'tapyard-prod' } });
    }
  });

  it('does not render without the master key, or without a bootstrap key while API keys are on', () => {
    const { 'secrets.masterKey': _key, ...noKey } = required;
    const r = helm(['template', 'rel', chart, '--kube-version', KUBE_VERSIONS[0], ...setArgs(noKey)]);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('set secrets.masterKey');
    const { 'secrets.bootstrapApiKey': _bootstrap, ...noBootstrap } = required;
    const keys = helm([
      'template',
      'rel',
      chart,
      '--kube-version',
      KUBE_VERSIONS[0],
      ...setArgs(noBootstrap),
    ]);
    expect(keys.status).not.toBe(0);
    expect(keys.stderr).toContain('set secrets.bootstrapApiKey');
    const off = render({ ...noBootstrap, 'config.USE_API_KEYS': 'false' });
    expect(find(manifests(off), 'Secret', 'rel-tapyard-env').stringData).not.toHaveProperty(
      'TAPYARD_BOOTSTRAP_API_KEY',
    );
  });

  it('values.schema.json refuses a misspelled or mistyped value', () => {
    const misspelled = helm([
      'template',
      'rel',
      chart,
      '--kube-version',
      KUBE_VERSIONS[0],
      ...setArgs(required),
      '--set',
      'worker.replicaz=3',
    ]);
    expect(misspelled.status).not.toBe(0);
    expect(misspelled.stderr).toMatch(/replicaz/);
    const badKey = helm([
      'template',
      'rel',
      chart,
      '--kube-version',
      KUBE_VERSIONS[0],
      ...setArgs({ ...required, 'secrets.masterKey': 'short' }),
    ]);
    expect(badKey.status).not.toBe(0);
    expect(badKey.stderr).toMatch(/masterKey/);
  });

  it('HPA: the worker scales on the age of the oldest waiting job; the Deployment leaves replicas to it', () => {
    const yaml = render(required, ['--set', 'worker.autoscaling.hpa.enabled=true']);
    expect(validate(yaml)).toEqual([]);
    const all = manifests(yaml);
    const hpa = find(all, 'HorizontalPodAutoscaler', 'rel-tapyard-worker').spec!;
    expect(hpa.scaleTargetRef).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: 'rel-tapyard-worker',
    });
    expect(hpa.metrics).toEqual([
      {
        type: 'External',
        external: {
          metric: { name: 'tapyard_queue_oldest_job_age_seconds' },
          target: { type: 'Value', value: '30' },
        },
      },
    ]);
    expect(find(all, 'Deployment', 'rel-tapyard-worker').spec!.replicas).toBeUndefined();
    expect(find(all, 'Deployment', 'rel-tapyard-api').spec!.replicas).toBe(2);
  });

  it('KEDA: a ScaledObject on the same metric (its CRD has no schema here; the rest still validates)', () => {
    const yaml = render(required, ['--set', 'worker.autoscaling.keda.enabled=true']);
    expect(validate(yaml, ['ScaledObject'])).toEqual([]);
    const scaled = find(manifests(yaml), 'ScaledObject', 'rel-tapyard-worker');
    expect(scaled.apiVersion).toBe('keda.sh/v1alpha1');
    expect(scaled.spec).toMatchObject({ scaleTargetRef: { name: 'rel-tapyard-worker' }, minReplicaCount: 2 });
    expect(scaled.spec!.triggers[0]).toMatchObject({
      type: 'prometheus',
      metricType: 'Value',
      metadata: { query: 'max(tapyard_queue_oldest_job_age_seconds)', threshold: '30' },
    });
    const both = helm([
      'template',
      'rel',
      chart,
      '--kube-version',
      KUBE_VERSIONS[0],
      ...setArgs(required),
      '--set',
      'worker.autoscaling.keda.enabled=true',
      '--set',
      'worker.autoscaling.hpa.enabled=true',
    ]);
    expect(both.status).not.toBe(0);
    expect(both.stderr).toContain('enable hpa or keda, not both');
  });
});
