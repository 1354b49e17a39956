import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

type Controller = 'pids' | 'memory' | 'cpu';
const CONTROLLERS: readonly Controller[] = ['pids', 'memory', 'cpu'];
/** Run cgroups live under this directory of each hierarchy, shared by the host's platform processes. */
const PARENT = 'tapyard-sandbox';
/** A run may use one CPU's worth of time per period: it can never starve the platform or other runs. */
const CPU_PERIOD_US = 100_000;
const CPU_QUOTA_US = 100_000;
/** bwrap's own two processes (the monitor and the namespace's pid 1) live in the run's cgroup too. */
const BWRAP_PROCESSES = 2;
/**
 * A run's last processes (bwrap's pid 1 dies just after the monitor the platform waits for) may take
 * a while to be reaped before the cgroup can go: retried after 1, 2, 4... ms, then every 50 ms, for
 * about 5 s in all. Most runs are gone within a few milliseconds; a flat 50 ms was on every job's path.
 */
const REMOVE_WAIT_MS = 5_000;
const REMOVE_PAUSE_MS = 50;

export interface CgroupLimits {
  maxProcesses: number;
  memoryBytes: number;
}

/**
 * Where this host lets a root platform put each run into cgroups of its own: processes, memory
 * (the whole run's, its /tmp included) and CPU time then form a budget per run that other runs
 * cannot use up. cgroup v2 where the unified hierarchy offers pids, memory and cpu; else the
 * v1 hierarchies of those controllers.
 */
export class CgroupHost {
  constructor(
    readonly version: 1 | 2,
    private readonly parents: ReadonlyMap<Controller, string>,
  ) {}

  /** Where the cgroups named `name` are, per controller. */
  paths(name: string): Map<Controller, string> {
    return new Map(CONTROLLERS.map((c) => [c, join(this.parents.get(c) ?? '', name)]));
  }

  describe(): string {
    return `cgroup v${this.version} (${CONTROLLERS.join(', ')})`;
  }

  /** A fresh cgroup per hierarchy, named uniquely on the host (e.g. after the run's leased uid). */
  async create(name: string, limits: CgroupLimits): Promise<RunCgroup> {
    const cgroup = new RunCgroup(this.version, this.paths(name));
    try {
      // A crashed worker may have left the same name behind; it is empty, since the uid was free.
      for (const dir of cgroup.dirs) await mkdir(dir, { recursive: true });
      await cgroup.limit(limits);
    } catch (err) {
      await cgroup.remove();
      throw err;
    }
    return cgroup;
  }
}

export class RunCgroup {
  constructor(
    private readonly version: 1 | 2,
    private readonly byController: ReadonlyMap<Controller, string>,
  ) {}

  /** One directory per hierarchy (v2 has one for all controllers). */
  get dirs(): string[] {
    return [...new Set(this.byController.values())];
  }

  /** Writing a pid to each of these moves that process (and its future children) into the run. */
  get procsFiles(): string[] {
    return this.dirs.map((dir) => join(dir, 'cgroup.procs'));
  }

  async limit({ maxProcesses, memoryBytes }: CgroupLimits): Promise<void> {
    const pids = String(maxProcesses + BWRAP_PROCESSES);
    if (this.version === 2) {
      await this.write('pids', 'pids.max', pids);
      await this.write('memory', 'memory.max', String(memoryBytes));
      await this.write('cpu', 'cpu.max', `${CPU_QUOTA_US} ${CPU_PERIOD_US}`);
      return;
    }
    await this.write('pids', 'pids.max', pids);
    await this.write('memory', 'memory.limit_in_bytes', String(memoryBytes));
    await this.write('cpu', 'cpu.cfs_period_us', String(CPU_PERIOD_US));
    await this.write('cpu', 'cpu.cfs_quota_us', String(CPU_QUOTA_US));
  }

  /** Whether the kernel killed a process of the run for going over its memory. */
  async memoryExceeded(): Promise<boolean> {
    const file = this.version === 2 ? 'memory.events' : 'memory.oom_control';
    try {
      const text = await readFile(join(this.byController.get('memory') ?? '', file), 'utf8');
      return Number(/^oom_kill (\d+)$/m.exec(text)?.[1] ?? 0) > 0;
    } catch {
      return false;
    }
  }

  /** Removes the run's cgroups once their last process is gone; false when one would not go. */
  async remove(): Promise<boolean> {
    let removed = true;
    for (const dir of this.dirs) removed = (await removeDir(dir)) && removed;
    return removed;
  }

  private write(controller: Controller, file: string, value: string): Promise<void> {
    return writeFile(join(this.byController.get(controller) ?? '', file), value);
  }
}

async function removeDir(dir: string): Promise<boolean> {
  for (let round = 0, waited = 0; waited < REMOVE_WAIT_MS; round += 1) {
    try {
      await rmdir(dir);
      return true;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return true;
      if (code !== 'EBUSY') return false;
    }
    const pause = Math.min(2 ** round, REMOVE_PAUSE_MS);
    await sleep(pause);
    waited += pause;
  }
  return false;
}

let detected: Promise<CgroupHost | null> | null = null;

/** The host's cgroups, if a root platform can make and limit run cgroups there; once per process. */
export function cgroupHost(): Promise<CgroupHost | null> {
  detected ??= detect().catch(() => null);
  return detected;
}

async function detect(): Promise<CgroupHost | null> {
  if (process.getuid?.() !== 0) return null;
  const mounts = (await readFile('/proc/self/mounts', 'utf8'))
    .split('\n')
    .map((line) => line.split(' '))
    .filter((f) => f.length >= 4)
    .map(([, dir, type, options]) => ({ dir: unescapeMount(dir), type, options: options.split(',') }));
  const candidates: CgroupHost[] = [];
  for (const m of mounts.filter((m) => m.type === 'cgroup2')) {
    const host = await unified(m.dir);
    if (host) candidates.push(host);
  }
  const v1 = CONTROLLERS.map((c) => mounts.find((m) => m.type === 'cgroup' && m.options.includes(c)));
  if (v1.every((m) => m !== undefined)) {
    candidates.push(
      new CgroupHost(1, new Map(CONTROLLERS.map((c, i) => [c, join(v1[i]?.dir ?? '', PARENT)]))),
    );
  }
  for (const host of candidates) if (await works(host)) return host;
  return null;
}

/** The unified hierarchy, when it has every controller and lets us hand them to a child. */
async function unified(root: string): Promise<CgroupHost | null> {
  try {
    const available = (await readFile(join(root, 'cgroup.controllers'), 'utf8')).trim().split(/\s+/);
    if (!CONTROLLERS.every((c) => available.includes(c))) return null;
    const enable = CONTROLLERS.map((c) => `+${c}`).join(' ');
    const parent = join(root, PARENT);
    await writeFile(join(root, 'cgroup.subtree_control'), enable);
    await mkdir(parent, { recursive: true });
    await writeFile(join(parent, 'cgroup.subtree_control'), enable);
    return new CgroupHost(2, new Map(CONTROLLERS.map((c) => [c, parent])));
  } catch {
    return null;
  }
}

/** Makes, limits and removes a probe cgroup: read-only or delegated-away hierarchies fail here. */
async function works(host: CgroupHost): Promise<boolean> {
  try {
    const probe = await host.create(`probe-${process.pid}`, {
      maxProcesses: 1,
      memoryBytes: 64 * 1024 * 1024,
    });
    return await probe.remove();
  } catch {
    return false;
  }
}

/** /proc/self/mounts escapes spaces and a few other bytes as \ooo. */
function unescapeMount(path: string): string {
  return path.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}
