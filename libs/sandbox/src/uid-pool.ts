import { spawn } from 'node:child_process';
import { mkdir, readdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { threadId } from 'node:worker_threads';
import { setTimeout as sleep } from 'node:timers/promises';
import { SandboxError } from './errors';

/** Host uids (and gids of the same number) handed to runs, both ends included. */
export interface UidRange {
  first: number;
  last: number;
}

/**
 * Clear of the usual allocations: regular users and systemd's dynamic users (below 65536),
 * nobody (65534) and the subordinate ranges useradd hands out for rootless containers (from 100000).
 */
export const DEFAULT_UID_RANGE: Readonly<UidRange> = Object.freeze({
  first: 1_000_000_000,
  last: 1_000_065_535,
});
/** Shared by every platform process on the host, so two workers never hand out the same uid. */
export const DEFAULT_UID_LOCK_DIR = '/run/tapyard/sandbox-uids';

/** How many uids one acquire() tries before it gives up. */
const MAX_PICKS = 64;
/**
 * A run's leftovers get this long (rounds x pause) to die after SIGKILL and be reaped (the kernel
 * counts a zombie against RLIMIT_NPROC until its reaper, often a slow init, collects it) before
 * the uid is retired instead of given back.
 */
const SWEEP_ROUNDS = 200;
const SWEEP_PAUSE_MS = 50;

/** uids leased by this thread; the lock files tell processes and threads apart. */
const leased = new Set<number>();

/**
 * Hands each run a host uid of its own, so RLIMIT_NPROC (which the kernel counts per real uid)
 * is a budget of that run alone, and runs cannot signal each other's processes.
 *
 * Across processes (and worker threads) a lease is a file `<uid>.<pid>.<thread>` in the lock
 * directory. A holder writes its file first and then looks for another live holder of the uid; of
 * two racing for one uid the later reader always sees the earlier file and backs off, so at most
 * one keeps it. Files of dead processes (a crashed worker) are taken over once no process runs as
 * that uid.
 */
export class UidPool {
  constructor(
    readonly range: Readonly<UidRange>,
    readonly lockDir: string = DEFAULT_UID_LOCK_DIR,
  ) {
    const { first, last } = range;
    if (
      !Number.isSafeInteger(first) ||
      !Number.isSafeInteger(last) ||
      first < 1 ||
      last < first ||
      last > 2 ** 31 - 1
    ) {
      throw new RangeError(`the sandbox uid range must be 1 <= first <= last < 2^31 (got ${first}-${last})`);
    }
  }

  /** A uid nobody else holds; release the lease once the run's processes are gone. */
  async acquire(): Promise<UidLease> {
    await mkdir(this.lockDir, { recursive: true, mode: 0o700 });
    for (const uid of this.candidates()) {
      if (leased.has(uid)) continue;
      leased.add(uid);
      try {
        if (await this.claim(uid)) return new UidLease(uid, this.lockFile(uid));
      } catch (err) {
        leased.delete(uid);
        throw new SandboxError(
          'spawn_failed',
          `the sandbox could not reserve a uid: ${(err as Error).message}`,
        );
      }
      leased.delete(uid);
    }
    const { first, last } = this.range;
    throw new SandboxError(
      'spawn_failed',
      `every sandbox uid tried in ${first}-${last} is in use; give the sandbox a wider uid range`,
    );
  }

  /** Random picks in a large range; every uid, from a random start, in a small one. */
  private *candidates(): Generator<number> {
    const size = this.range.last - this.range.first + 1;
    const start = Math.floor(Math.random() * size);
    for (let i = 0; i < Math.min(size, MAX_PICKS); i += 1) {
      const offset = size <= MAX_PICKS ? (start + i) % size : Math.floor(Math.random() * size);
      yield this.range.first + offset;
    }
  }

  private async claim(uid: number): Promise<boolean> {
    const mine = this.lockFile(uid);
    await writeFile(mine, '', { mode: 0o600 });
    const others = (await readdir(this.lockDir)).filter(
      (f) => f.startsWith(`${uid}.`) && join(this.lockDir, f) !== mine,
    );
    const holders = others.map((f) => Number(f.split('.')[1]));
    const free = !holders.some(isAlive) && (holders.length === 0 || (await processesOf(uid)).length === 0);
    if (!free) {
      await unlinkQuietly(mine);
      return false;
    }
    await Promise.all(others.map((f) => unlinkQuietly(join(this.lockDir, f))));
    return true;
  }

  private lockFile(uid: number): string {
    return join(this.lockDir, `${uid}.${process.pid}.${threadId}`);
  }
}

export class UidLease {
  private released = false;

  constructor(
    readonly uid: number,
    private readonly lockFile: string,
  ) {}

  /**
   * For when processes may still run as the uid (the run was killed, or it ran without a pid
   * namespace): kills them and waits until they are gone. False when one survived: then the uid
   * must stay held (retired) rather than be handed to the next run.
   */
  sweep(): Promise<boolean> {
    return sweepUid(this.uid);
  }

  /** Gives the uid back; only once no process runs as it any more. */
  async release(): Promise<void> {
    if (this.released) return;
    await unlinkQuietly(this.lockFile);
    this.released = true;
    leased.delete(this.uid);
  }
}

/**
 * For a worker thread of this process that ended without giving its uids back (terminated: its job
 * stalled, or it outlasted the wait to stop its warm sandboxes): kills whatever still runs as each uid
 * it held (its sandboxes, orphaned) and gives the uid back. Without this, its lease files, naming this
 * live process, keep those uids taken for as long as the process runs. A uid whose processes survive
 * stays held, as after a run's sweep. Answers the uids given back.
 */
export async function reclaimThreadLeases(
  threadId: number,
  lockDir: string = DEFAULT_UID_LOCK_DIR,
): Promise<number[]> {
  let files: string[];
  try {
    files = await readdir(lockDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const suffix = `.${process.pid}.${threadId}`;
  const reclaimed: number[] = [];
  for (const file of files.filter((f) => f.endsWith(suffix))) {
    const uid = Number(file.slice(0, -suffix.length));
    if (!Number.isSafeInteger(uid) || !(await sweepUid(uid))) continue;
    await unlinkQuietly(join(lockDir, file));
    reclaimed.push(uid);
  }
  return reclaimed;
}

/** Kills whatever still runs as uid and waits until it is gone; false when something survived. */
async function sweepUid(uid: number): Promise<boolean> {
  for (let round = 0; round < SWEEP_ROUNDS; round += 1) {
    if ((await processesOf(uid)).length === 0) return true;
    // Killing as the uid itself reaches exactly its processes and never a pid reused meanwhile.
    if (round % 20 === 0) await killAllAs(uid);
    await sleep(SWEEP_PAUSE_MS);
  }
  return false;
}

/** kill(-1) signals every process the sender's uid may signal: those whose real or saved uid is uid. */
function killAllAs(uid: number): Promise<void> {
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', 'kill -KILL -1'], { uid, gid: uid, stdio: 'ignore', env: {} });
    child.once('error', () => resolve());
    child.once('close', () => resolve());
  });
}

/** Pids whose real uid (the one RLIMIT_NPROC counts) is uid. */
export async function processesOf(uid: number): Promise<number[]> {
  const pids = (await readdir('/proc')).filter((e) => /^\d+$/.test(e));
  const owners = await Promise.all(
    pids.map(async (pid) => {
      try {
        const status = await readFile(`/proc/${pid}/status`, 'latin1');
        return Number(/\nUid:\s+(\d+)/.exec(status)?.[1]);
      } catch {
        return NaN; // gone meanwhile
      }
    }),
  );
  return pids.filter((_, i) => owners[i] === uid).map(Number);
}

function isAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function unlinkQuietly(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}
