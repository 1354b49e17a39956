import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { cgroupHost } from './cgroups';
import { writeScript } from './script-file';
import { DEFAULT_UID_RANGE } from './uid-pool';
import { offModeAvailable, py, runScript, SandboxFixture, sandboxFixture, SpecMode } from './spec-fixtures';

const modes: SpecMode[] = offModeAvailable ? ['bwrap', 'off'] : ['bwrap'];
const isRoot = process.getuid?.() === 0;
const REPO_FILE = resolve(__dirname, '..', '..', '..', 'package.json');

describe.each(modes)('sandbox isolation (bwrap: %s)', (mode) => {
  let fx: SandboxFixture;
  beforeAll(async () => {
    fx = await sandboxFixture(mode, { limits: { timeoutMs: 20_000 } });
  });
  afterAll(() => fx.close());

  it('gives the script only the request env plus the fixed set', async () => {
    process.env.TAPYARD_SANDBOX_CANARY = 'canary-4f1d2c';
    try {
      const { records, outcome } = await runScript(
        fx,
        py('import os', 'def fetch():', '    return [dict(os.environ)]'),
        { env: { API_BASE: 'https://example.com', PATH: '/evil' } },
      );
      expect(outcome.error).toBeNull();
      const env = records[0] as Record<string, string>;
      expect(Object.keys(env).sort()).toEqual(
        [
          'API_BASE',
          'HOME',
          'LANG',
          'MALLOC_ARENA_MAX',
          'PATH',
          'PYTHONDONTWRITEBYTECODE',
          'PYTHONUNBUFFERED',
        ]
          .concat(
            // Python itself sets LC_CTYPE when it coerces the C locale; bwrap keeps PWD.
            Object.keys(env).filter((k) => k === 'LC_CTYPE' || k === 'PWD'),
          )
          .sort(),
      );
      expect(env.PATH).toMatch(/\/bin:\/usr\/local\/bin:\/usr\/bin:\/bin$/);
      expect(env.HOME).toBe('/tmp');
      expect(JSON.stringify(env)).not.toContain('canary-4f1d2c');
    } finally {
      delete process.env.TAPYARD_SANDBOX_CANARY;
    }
  });

  it('runs as an unprivileged uid of its own, without supplementary groups', async () => {
    const script = py('import os', 'def fetch():', '    return [os.getuid(), os.getgid(), os.getgroups()]');
    const one = await runScript(fx, script);
    const separation = await fx.sandbox.separation();
    const cgroupsUsable = (await cgroupHost()) !== null;
    expect(separation.kind).toBe(
      isRoot
        ? mode === 'bwrap' && cgroupsUsable
          ? 'cgroup'
          : 'uid'
        : mode === 'bwrap'
          ? 'user-namespace'
          : 'shared-uid',
    );
    if (!isRoot) {
      expect(one.records).toEqual([process.getuid?.(), process.getgid?.(), expect.anything()]);
      return;
    }
    const [uid, gid, groups] = one.records as [number, number, number[]];
    expect(uid).toBeGreaterThanOrEqual(DEFAULT_UID_RANGE.first);
    expect(uid).toBeLessThanOrEqual(DEFAULT_UID_RANGE.last);
    expect([gid, groups]).toEqual([uid, []]);
  });

  it('masks secrets in logs (even split across writes) and in errors', async () => {
    const secret = 'tok-9a8b7c6d5e';
    const { outcome } = await runScript(
      fx,
      py(
        'import os, sys, time',
        'def fetch():',
        '    key = os.environ["API_KEY"]',
        '    sys.stdout.write("auth=" + key[:6]); sys.stdout.flush(); time.sleep(0.05)',
        '    sys.stdout.write(key[6:] + "\\n"); sys.stdout.flush()',
        '    raise ValueError("rejected key " + key)',
      ),
      { env: { API_KEY: secret }, secrets: [secret, 'ab'] },
    );
    expect(outcome.logs).toBe('auth=***\n');
    expect(outcome.error?.message).toBe('fetch() raised ValueError: rejected key ***');
    expect(outcome.error?.details.traceback).toContain('raise ValueError("rejected key " + key)');
    expect(JSON.stringify(outcome)).not.toContain(secret.slice(4));
  });
});

(existsSync('/usr/bin/bwrap') ? describe : describe.skip)('bwrap filesystem isolation', () => {
  let fx: SandboxFixture;
  beforeAll(async () => {
    fx = await sandboxFixture('bwrap', { limits: { timeoutMs: 20_000 } });
  });
  afterAll(() => fx.close());

  it('hides the platform files, other taps and the host /tmp', async () => {
    const other = await writeScript(py('SECRET = "other tap"'));
    try {
      const { records, outcome } = await runScript(
        fx,
        py(
          'import os',
          'def probe(path):',
          '    try:',
          '        with open(path) as f: f.read(1)',
          '        return "readable"',
          '    except OSError as e:',
          '        return type(e).__name__',
          'def fetch():',
          `    return [{"repo": probe(${JSON.stringify(REPO_FILE)}), "other": probe(${JSON.stringify(other.path)}),`,
          `             "other_dir": os.path.exists(${JSON.stringify(dirname(other.path))}),`,
          '             "root_cache": os.path.exists("/root/.cache"), "shadow": probe("/etc/shadow"),',
          '             "tmp": os.listdir("/tmp"), "procs": len([p for p in os.listdir("/proc") if p.isdigit()]),',
          '             "venv_write": probe_write("/venv/pyvenv.cfg"), "cwd": os.getcwd()}]',
          'def probe_write(path):',
          '    try:',
          '        open(path, "a").close()',
          '        return "writable"',
          '    except OSError as e:',
          '        return type(e).__name__',
        ),
      );
      expect(outcome.error).toBeNull();
      expect(existsSync(REPO_FILE)).toBe(true);
      expect(records[0]).toEqual({
        repo: 'FileNotFoundError',
        other: 'FileNotFoundError',
        other_dir: false,
        root_cache: false,
        shadow: 'PermissionError',
        tmp: [],
        procs: expect.any(Number),
        venv_write: expect.stringMatching(/^(PermissionError|OSError)$/),
        cwd: '/tmp',
      });
      // pid 1 (bwrap's reaper), the harness, and nothing of the host.
      expect((records[0] as { procs: number }).procs).toBeLessThanOrEqual(3);
    } finally {
      await other.remove();
    }
  });

  it('gives each run a private, writable /tmp', async () => {
    const name = `tapyard-private-${process.pid}-${Date.now()}`;
    const write = py(
      'import os',
      'def fetch():',
      `    open("/tmp/${name}", "w").write("x")`,
      '    return [os.listdir("/tmp")]',
    );
    const first = await runScript(fx, write);
    expect(first.records).toEqual([[name]]);
    expect(existsSync(`/tmp/${name}`)).toBe(false);
    const second = await runScript(fx, py('import os', 'def fetch():', '    return [os.listdir("/tmp")]'));
    expect(second.records).toEqual([[]]);
  });

  it('caps the private /tmp', async () => {
    const { outcome } = await runScript(
      fx,
      py(
        'def fetch():',
        '    with open("/tmp/big", "wb") as f:',
        '        f.write(b"x" * (8 * 1024 * 1024))',
        '    return []',
      ),
      { limits: { maxFileBytes: 1024 * 1024 } },
    );
    expect(outcome.error?.kind).toBe('fetch_raised');
    expect(outcome.error?.message).toMatch(/File too large|No space left/);
  });

  it('refuses new user namespaces but allows threads, fork and subprocesses', async () => {
    const { records, outcome } = await runScript(
      fx,
      py(
        'import ctypes, os, subprocess, threading',
        'def fetch():',
        '    libc = ctypes.CDLL(None, use_errno=True)',
        '    unshared = libc.unshare(0x10000000)  # CLONE_NEWUSER',
        '    seen = []',
        '    t = threading.Thread(target=lambda: seen.append("thread"))',
        '    t.start(); t.join()',
        '    pid = os.fork()',
        '    if pid == 0: os._exit(7)',
        '    child = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])',
        '    echo = subprocess.run(["echo", "hi"], capture_output=True, text=True).stdout.strip()',
        '    return [unshared, seen, child, echo]',
      ),
    );
    expect(outcome.error).toBeNull();
    expect(records).toEqual([-1, ['thread'], 7, 'hi']);
  });

  it('has a network namespace of its own with nothing but loopback (see sandbox-network.spec.ts)', async () => {
    const { records } = await runScript(
      fx,
      py(
        'import socket',
        'def fetch():',
        '    return [socket.gethostname(), [name for _, name in socket.if_nameindex()]]',
      ),
    );
    expect(records).toEqual(['tapyard-sandbox', ['lo']]);
  });
});
