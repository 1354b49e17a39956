import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { PythonSandbox } from './sandbox';
import { writeScript } from './script-file';
import { offModeAvailable, py, runScript, SandboxFixture, sandboxFixture, SpecMode } from './spec-fixtures';
import { cgroupHost } from './cgroups';
import { processesOf } from './uid-pool';

const modes: SpecMode[] = offModeAvailable ? ['bwrap', 'off'] : ['bwrap'];
const MiB = 1024 * 1024;
const isRoot = process.getuid?.() === 0;

describe.each(modes)('sandbox limits (bwrap: %s)', (mode) => {
  let fx: SandboxFixture;
  beforeAll(async () => {
    fx = await sandboxFixture(mode, { limits: { timeoutMs: 15_000, cpuSeconds: 10 } });
  });
  afterAll(() => fx.close());

  it('stops a script that runs past the wall-clock timeout, with its children', async () => {
    const started = Date.now();
    const { outcome } = await runScript(
      fx,
      py(
        'import subprocess, time',
        'def fetch():',
        '    subprocess.Popen(["sleep", "60"])',
        '    time.sleep(60)',
      ),
      { limits: { timeoutMs: 700 } },
    );
    expect(outcome.error).toMatchObject({
      kind: 'timeout',
      message: 'the script ran longer than 700 ms and was stopped',
    });
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('stops a busy loop at the CPU limit', async () => {
    const { outcome } = await runScript(fx, py('def fetch():', '    while True:', '        pass'), {
      limits: { cpuSeconds: 1 },
    });
    expect(outcome.error).toMatchObject({
      kind: 'cpu_limit',
      message: 'the script used more than 1 s of CPU time and was stopped',
    });
    expect(outcome.signal).toBe('SIGXCPU');
  });

  it('reports a segfault as a crash', async () => {
    const { outcome } = await runScript(fx, py('import ctypes', 'def fetch():', '    ctypes.string_at(0)'));
    expect(outcome.error).toMatchObject({ kind: 'crashed', message: 'the script crashed (SIGSEGV)' });
  });

  it('reports a script that exits mid-run', async () => {
    const { outcome } = await runScript(fx, py('import os', 'def fetch():', '    os._exit(3)'));
    expect(outcome.error).toMatchObject({
      kind: 'crashed',
      message: 'the script exited with code 3 before finishing',
    });
  });

  it('contains a fork bomb', async () => {
    const started = Date.now();
    const { outcome } = await runScript(
      fx,
      py('import os', 'def fetch():', '    while True:', '        os.fork()'),
      {
        limits: { maxProcesses: 12, timeoutMs: 8000, cpuSeconds: 5 },
      },
    );
    expect(outcome.error?.kind).toMatch(/^(fetch_raised|timeout)$/);
    if (outcome.error?.kind === 'fetch_raised') {
      expect(outcome.error.message).toContain('BlockingIOError');
      expect(outcome.error.message).toContain('limit of 12 processes');
    }
    expect(Date.now() - started).toBeLessThan(10_000);
    // Nothing of it survives: the next run starts normally.
    const after = await runScript(fx, py('def fetch():', '    return [1]'));
    expect(after.records).toEqual([1]);
  });

  it("keeps each run's process budget its own: a run holding all of its processes does not stop another", async () => {
    // A forks until the kernel refuses, reports how many it holds, and keeps them until its stdin ends.
    const holder = await writeScript(
      py(
        'import os',
        'def fetch():',
        '    held = 0',
        '    while True:',
        '        try:',
        '            pid = os.fork()',
        '        except BlockingIOError:',
        '            break',
        '        if pid == 0:',
        '            os.read(0, 1)',
        '            os._exit(0)',
        '        held += 1',
        '    yield {"held": held}',
        '    os.read(0, 1)',
        '    for _ in range(held):',
        '        os.wait()',
      ),
    );
    try {
      const a = fx.sandbox.run({
        scriptPath: holder.path,
        python: fx.venv.python,
        venvDir: fx.venv.dir,
        stdin: true,
        flushEach: true,
        limits: { maxProcesses: 8 },
      });
      const records = a.records();
      const first = await records.next();
      expect(first.value).toEqual({ held: expect.any(Number) });
      // B starts while A sits at its limit, and needs processes of its own.
      const b = await runScript(
        fx,
        py(
          'import subprocess',
          'def fetch():',
          '    return [subprocess.run(["true"]).returncode for _ in range(3)]',
        ),
        { limits: { maxProcesses: 8 } },
      );
      a.input()?.end();
      const rest: unknown[] = [];
      for await (const record of records) rest.push(record);
      expect(rest).toEqual([]);
      expect(b.outcome.error).toBeNull();
      expect(b.records).toEqual([0, 0, 0]);
      expect((await a.outcome).error).toBeNull();
      expect((first.value as { held: number }).held).toBeGreaterThanOrEqual(1);
    } finally {
      await holder.remove();
    }
  });

  (isRoot ? it : it.skip)('gives the uid back after every run, also after leftovers and a kill', async () => {
    // One uid in the pool: a run that kept it, or left a process running as it, stops the next one.
    const lockDir = await mkdtemp(join(tmpdir(), 'tapyard-uids-'));
    const host = mode === 'bwrap' ? await cgroupHost() : null;
    const only = 2_000_000_000 + (process.pid % 100_000);
    const sandbox = new PythonSandbox({
      bwrap: mode === 'bwrap' ? 'require' : 'off',
      uids: { first: only, last: only },
      uidLockDir: lockDir,
      limits: { timeoutMs: 15_000 },
    });
    const scripts = [
      py('import os', 'def fetch():', '    return [os.getuid()]'),
      // A sleeper in a session of its own: out of reach of the process group kill.
      py(
        'import os, subprocess',
        'def fetch():',
        '    subprocess.Popen(["sleep", "30"], start_new_session=True)',
        '    return [os.getuid()]',
      ),
      py(
        'import os, subprocess, time',
        'def fetch():',
        '    subprocess.Popen(["sleep", "30"], start_new_session=True)',
        '    yield os.getuid()',
        '    time.sleep(30)',
      ),
    ];
    // Runs 1, 8, 15 leave a process behind; 4, 11, 18 leave one and are killed.
    const kind = (i: number) => [0, 1, 0, 0, 2, 0, 0][i % 7];
    try {
      for (let i = 0; i < 20; i += 1) {
        const script = await writeScript(scripts[kind(i)]);
        try {
          const handle = sandbox.run({
            scriptPath: script.path,
            python: fx.venv.python,
            venvDir: fx.venv.dir,
            flushEach: true,
          });
          const records: unknown[] = [];
          for await (const record of handle) {
            records.push(record);
            if (kind(i) === 2) handle.kill();
          }
          const outcome = await handle.outcome;
          expect(outcome.error?.kind ?? null).toBe(kind(i) === 2 ? 'killed' : null);
          expect(records).toEqual([only]);
          expect(await readdir(lockDir)).toEqual([]);
          expect(await processesOf(only)).toEqual([]);
          for (const dir of host?.paths(`run-${only}`).values() ?? []) expect(existsSync(dir)).toBe(false);
        } finally {
          await script.remove();
        }
      }
    } finally {
      await rm(lockDir, { recursive: true, force: true });
    }
  });

  it('puts each run into cgroups of its own with its limits, where cgroups are usable', async () => {
    const host = mode === 'bwrap' ? await cgroupHost() : null;
    if (!host) return;
    const script = await writeScript(
      py('import os', 'def fetch():', '    yield os.getuid()', '    os.read(0, 1)'),
    );
    try {
      const handle = fx.sandbox.run({
        scriptPath: script.path,
        python: fx.venv.python,
        venvDir: fx.venv.dir,
        stdin: true,
        flushEach: true,
        limits: { maxProcesses: 9, memoryBytes: 300 * MiB },
      });
      const records = handle.records();
      const uid = (await records.next()).value as number;
      const dirs = host.paths(`run-${uid}`);
      const read = (controller: 'pids' | 'memory' | 'cpu', file: string) =>
        readFile(join(dirs.get(controller) ?? '', file), 'utf8').then((text) => text.trim());
      expect(await read('pids', 'pids.max')).toBe('11'); // bwrap's two processes besides the run's nine
      if (host.version === 2) {
        expect(await read('memory', 'memory.max')).toBe(String(300 * MiB));
        expect(await read('cpu', 'cpu.max')).toBe('100000 100000');
      } else {
        expect(await read('memory', 'memory.limit_in_bytes')).toBe(String(300 * MiB));
        expect(await read('cpu', 'cpu.cfs_quota_us')).toBe('100000');
      }
      // The script itself is in them.
      const [pid] = await processesOf(uid);
      const own = await readFile(`/proc/${pid}/cgroup`, 'utf8');
      expect(own).toContain(`/tapyard-sandbox/run-${uid}\n`);
      handle.input()?.end();
      const rest: unknown[] = [];
      for await (const record of records) rest.push(record);
      expect(rest).toEqual([]);
      expect((await handle.outcome).error).toBeNull();
      for (const dir of dirs.values()) expect(existsSync(dir)).toBe(false);
    } finally {
      await script.remove();
    }
  });

  it('caps the memory of the whole run, not only of each process, where cgroups are usable', async () => {
    if (mode === 'off' || !(await cgroupHost())) return;
    // Four processes of 100 MiB each, every one within its own 256 MiB, all alive at once.
    const { records, outcome } = await runScript(
      fx,
      py(
        'import os',
        'def fetch():',
        '    go_r, go_w = os.pipe()',
        '    kids = []',
        '    for _ in range(4):',
        '        ready_r, ready_w = os.pipe()',
        '        pid = os.fork()',
        '        if pid == 0:',
        '            os.close(ready_r)',
        '            os.close(go_w)',
        '            block = b"x" * (100 << 20)',
        '            os.write(ready_w, b"1")',
        '            os.read(go_r, 1)',
        '            os._exit(0)',
        '        os.close(ready_w)',
        '        alive = os.read(ready_r, 1)',
        '        os.close(ready_r)',
        '        kids.append(pid)',
        '        if not alive:',
        '            break',
        '    os.close(go_w)',
        '    ends = [os.waitpid(pid, 0)[1] for pid in kids]',
        '    if any(os.WIFSIGNALED(end) for end in ends):',
        '        raise MemoryError("a process of the run was killed")',
        '    return [len(kids)]',
      ),
      { limits: { memoryBytes: 256 * MiB } },
    );
    expect(records).toEqual([]);
    expect(outcome.error).toMatchObject({
      kind: 'memory_limit',
      message: 'the script used more than 256 MiB of memory',
    });
  });

  it('stops a script printing 1 GiB quickly, in bounded memory', async () => {
    const before = process.memoryUsage().rss;
    const started = Date.now();
    const { outcome } = await runScript(
      fx,
      py(
        'import sys',
        'line = "x" * (1 << 20) + "\\n"',
        'def fetch():',
        '    for _ in range(1024):',
        '        sys.stdout.write(line)',
        '    return []',
      ),
      { limits: { maxLogBytes: MiB } },
    );
    expect(outcome.error).toMatchObject({
      kind: 'output_limit',
      message: 'the script printed more than 4 MiB of logs and was stopped',
    });
    expect(outcome.logsTruncated).toBe(true);
    expect(Buffer.byteLength(outcome.logs)).toBeLessThan(MiB + 200);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(process.memoryUsage().rss - before).toBeLessThan(200 * MiB);
  });

  it('truncates logs past maxLogBytes without failing the run', async () => {
    const { outcome } = await runScript(fx, py('def fetch():', '    print("y" * 5000)', '    return []'), {
      limits: { maxLogBytes: 2000 },
    });
    expect(outcome.error).toBeNull();
    expect(outcome.logsTruncated).toBe(true);
    expect(outcome.logs).toMatch(
      /^y{2000}\n\[logs truncated: the script printed 4.88 KiB; only the first 1.95 KiB are kept\]$/,
    );
  });

  it('stops a script whose records exceed maxOutputBytes', async () => {
    const { records, outcome } = await runScript(
      fx,
      py('def fetch():', '    while True:', '        yield {"pad": "z" * 1000}'),
      { limits: { maxOutputBytes: MiB } },
    );
    expect(outcome.error).toMatchObject({
      kind: 'output_limit',
      message: 'the script produced more than 1 MiB of records and was stopped',
    });
    expect(records.length).toBeLessThan(1100);
  });

  it('stops at a record larger than maxRecordBytes', async () => {
    const { outcome } = await runScript(fx, py('def fetch():', '    return [1, "q" * (3 * 1024 * 1024)]'), {
      limits: { maxRecordBytes: MiB },
    });
    expect(outcome.error).toMatchObject({
      kind: 'output_limit',
      message: 'record 1 is larger than 1 MiB and the run was stopped',
    });
  });

  it('applies backpressure: a slow consumer pauses the generator', async () => {
    const script = await writeScript(
      py(
        'import time',
        'def fetch():',
        '    for i in range(200_000):',
        '        yield {"i": i, "t": time.monotonic()}',
      ),
    );
    try {
      const handle = fx.sandbox.run({
        scriptPath: script.path,
        python: fx.venv.python,
        venvDir: fx.venv.dir,
      });
      let count = 0;
      let first: number | null = null;
      let late: number | null = null;
      for await (const batch of handle.batches()) {
        const rows = batch as { i: number; t: number }[];
        if (first === null) {
          first = rows[0].t;
          await sleep(1000); // the consumer stalls: the script must stall with it
        }
        for (const row of rows) if (row.i === 100_000) late = row.t;
        count += rows.length;
      }
      const outcome = await handle.outcome;
      expect(outcome.error).toBeNull();
      expect(count).toBe(200_000);
      expect(outcome.recordCount).toBe(200_000);
      // Unthrottled, row 100000 is produced well within a second of row 0.
      expect((late ?? 0) - (first ?? 0)).toBeGreaterThan(0.9);
    } finally {
      await script.remove();
    }
  });

  it('settles at the deadline when nobody consumes the records', async () => {
    const script = await writeScript(py('def fetch():', '    return [1, 2, 3]'));
    try {
      const handle = fx.sandbox.run({
        scriptPath: script.path,
        python: fx.venv.python,
        venvDir: fx.venv.dir,
        limits: { timeoutMs: 1500 },
      });
      expect((await handle.outcome).error).toMatchObject({
        kind: 'timeout',
        message: "the script's records were not consumed within 1.5 s",
      });
    } finally {
      await script.remove();
    }
  });

  it('kill() stops a run at once', async () => {
    const script = await writeScript(
      py('import itertools', 'def fetch():', '    return ({"n": n} for n in itertools.count())'),
    );
    try {
      const handle = fx.sandbox.run({
        scriptPath: script.path,
        python: fx.venv.python,
        venvDir: fx.venv.dir,
      });
      let seen = 0;
      for await (const _ of handle) {
        seen += 1;
        if (seen === 10) handle.kill();
      }
      const outcome = await handle.outcome;
      expect(outcome.error).toMatchObject({ kind: 'killed', message: 'the run was stopped by the caller' });
      expect(outcome.durationMs).toBeLessThan(5000);
    } finally {
      await script.remove();
    }
  });

  it('stops the script when the consumer leaves early', async () => {
    const script = await writeScript(py('import itertools', 'def fetch():', '    return itertools.count()'));
    try {
      const handle = fx.sandbox.run({
        scriptPath: script.path,
        python: fx.venv.python,
        venvDir: fx.venv.dir,
      });
      const firstTwenty: unknown[] = [];
      for await (const record of handle) {
        firstTwenty.push(record);
        if (firstTwenty.length === 20) break;
      }
      expect(firstTwenty).toEqual([...Array(20).keys()]);
      expect((await handle.outcome).error?.kind).toBe('killed');
    } finally {
      await script.remove();
    }
  });

  it('feeds onRecords with backpressure and reports its failure', async () => {
    const script = await writeScript(py('def fetch():', '    return range(10_000)'));
    try {
      let total = 0;
      const ok = fx.sandbox.run({
        scriptPath: script.path,
        python: fx.venv.python,
        venvDir: fx.venv.dir,
        onRecords: async (batch) => {
          total += batch.length;
          await sleep(1);
        },
      });
      expect((await ok.outcome).error).toBeNull();
      expect(total).toBe(10_000);
      const failing = fx.sandbox.run({
        scriptPath: script.path,
        python: fx.venv.python,
        venvDir: fx.venv.dir,
        onRecords: () => {
          throw new Error('database is down');
        },
      });
      expect((await failing.outcome).error).toMatchObject({
        kind: 'killed',
        message: 'the record consumer failed: database is down',
      });
    } finally {
      await script.remove();
    }
  });
});

describe('sandbox start failures', () => {
  it('fails closed without bwrap unless the operator turned the sandbox off', async () => {
    const off = new PythonSandbox({ bwrap: 'off', bwrapPath: '/nonexistent/bwrap' });
    expect(await off.isolation()).toBe('none');
    const fx = await sandboxFixture('off');
    try {
      const sandbox = new PythonSandbox({ bwrapPath: '/nonexistent/bwrap' });
      const { outcome } = await runScript({ sandbox, venv: fx.venv }, py('def fetch():', '    return []'));
      expect(outcome.error).toMatchObject({
        kind: 'spawn_failed',
        message:
          'the sandbox requires bwrap, which is not usable here: /nonexistent/bwrap does not exist ' +
          '(install bubblewrap, or set TAP_SANDBOX=off to run scripts without isolation)',
      });
    } finally {
      await fx.close();
    }
  });

  it('reports a missing interpreter or script as spawn_failed', async () => {
    const fx = await sandboxFixture('off');
    try {
      const missing = await runScript(
        { ...fx, venv: { ...fx.venv, python: '/nonexistent/python' } },
        py('x = 1'),
      );
      expect(missing.outcome.error?.kind).toBe('spawn_failed');
      const relative = await runScript({ ...fx, venv: { ...fx.venv, python: 'python3' } }, py('x = 1'));
      expect(relative.outcome.error).toMatchObject({ kind: 'spawn_failed' });
      const badLimits = await runScript(fx, py('x = 1'), { limits: { memoryBytes: 10 } });
      expect(badLimits.outcome.error?.message).toMatch(/memoryBytes must be an integer >= /);
    } finally {
      await fx.close();
    }
  });
});
