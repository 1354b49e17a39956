import { ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { threadId } from 'node:worker_threads';
import { processesOf, reclaimThreadLeases, UidPool } from './uid-pool';

const isRoot = process.getuid?.() === 0;

describe('UidPool', () => {
  let lockDir: string;
  let pool: UidPool;
  // One uid: every collision shows.
  const only = 2_000_100_000 + (process.pid % 100_000);
  const children: ChildProcess[] = [];

  beforeEach(async () => {
    lockDir = await mkdtemp(join(tmpdir(), 'tapyard-uids-'));
    pool = new UidPool({ first: only, last: only }, lockDir);
  });
  afterEach(async () => {
    for (const child of children.splice(0)) child.kill('SIGKILL');
    await rm(lockDir, { recursive: true, force: true });
  });

  async function sleeper(options: { uid?: number } = {}): Promise<ChildProcess> {
    const child = spawn('sleep', ['30'], { stdio: 'ignore', ...options, gid: options.uid });
    children.push(child);
    await once(child, 'spawn');
    return child;
  }

  async function ended(child: ChildProcess): Promise<void> {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  }

  const inUse = `every sandbox uid tried in ${only}-${only} is in use; give the sandbox a wider uid range`;

  it('never hands one uid to two runs of this process at once, and takes it back on release', async () => {
    const lease = await pool.acquire();
    expect(lease.uid).toBe(only);
    await expect(pool.acquire()).rejects.toMatchObject({ kind: 'spawn_failed', message: inUse });
    await lease.release();
    expect(await readdir(lockDir)).toEqual([]);
    const again = await pool.acquire();
    expect(again.uid).toBe(only);
    await again.release();
  });

  it('leaves a uid another live process or thread holds, and takes over the lock of a dead one', async () => {
    const holder = await sleeper();
    const theirs = `${only}.${holder.pid}.0`;
    await writeFile(join(lockDir, theirs), '');
    await expect(pool.acquire()).rejects.toMatchObject({ message: inUse });
    expect(await readdir(lockDir)).toEqual([theirs]);
    // Another worker thread of this very process is a holder of its own.
    const thread = `${only}.${process.pid}.${threadId + 1}`;
    await writeFile(join(lockDir, thread), '');
    await ended(holder);
    await expect(pool.acquire()).rejects.toMatchObject({ message: inUse });
    await rm(join(lockDir, thread));
    const lease = await pool.acquire();
    expect(await readdir(lockDir)).toEqual([`${only}.${process.pid}.${threadId}`]);
    await lease.release();
  });

  (isRoot ? it : it.skip)(
    'does not take over a dead holder while a process still runs as the uid, and sweeps it on release',
    async () => {
      const dead = spawn('true');
      await once(dead, 'exit');
      await writeFile(join(lockDir, `${only}.${dead.pid}.0`), '');
      const leftover = await sleeper({ uid: only });
      await expect(pool.acquire()).rejects.toMatchObject({ message: inUse });
      await ended(leftover);
      const lease = await pool.acquire();
      // A process of the run that outlived it (started here as the uid) dies with the sweep.
      const escaped = spawn('sleep', ['30'], { uid: only, gid: only, stdio: 'ignore', detached: true });
      children.push(escaped);
      await once(escaped, 'spawn');
      expect(await processesOf(only)).toEqual([escaped.pid]);
      expect(await lease.sweep()).toBe(true);
      expect(await processesOf(only)).toEqual([]);
      await lease.release();
      expect(await readdir(lockDir)).toEqual([]);
    },
  );

  (isRoot ? it : it.skip)(
    'takes back the uids of a thread of this process that ended without giving them back, killing what runs as them',
    async () => {
      // A stage thread terminated while its sandbox ran (a stalled job, a retire past its wait).
      const gone = threadId + 7;
      await writeFile(join(lockDir, `${only}.${process.pid}.${gone}`), '');
      const orphan = await sleeper({ uid: only });
      // Another live thread's lease is not its to take.
      const other = `${only + 1}.${process.pid}.${threadId + 8}`;
      await writeFile(join(lockDir, other), '');
      await expect(pool.acquire()).rejects.toMatchObject({ message: inUse });

      const killed = once(orphan, 'exit');
      expect(await reclaimThreadLeases(gone, lockDir)).toEqual([only]);
      expect(await killed).toEqual([null, 'SIGKILL']);
      expect(await processesOf(only)).toEqual([]);
      expect(await readdir(lockDir)).toEqual([other]);
      const lease = await pool.acquire();
      expect(lease.uid).toBe(only);
      await lease.release();
      expect(await reclaimThreadLeases(gone, join(lockDir, 'none'))).toEqual([]);
    },
  );

  it('refuses a range that is empty or reaches root', () => {
    expect(() => new UidPool({ first: 10, last: 9 }, lockDir)).toThrow(RangeError);
    expect(() => new UidPool({ first: 0, last: 9 }, lockDir)).toThrow(RangeError);
  });
});
