import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PackageInstallError, PackageSpecError } from './errors';
import { PythonSandbox } from './sandbox';
import { py, runScript, specPython } from './spec-fixtures';
import { VenvCache } from './venvs';

const NO_SUCH_PACKAGE = 'tapyard-no-such-package-xyz==1.0';

describe('VenvCache', () => {
  let root: string;
  let python: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'tapyard-venvs-'));
    await chmod(root, 0o755);
    python = await specPython('bwrap');
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  it('builds the empty venv once and reuses it', async () => {
    const cache = new VenvCache({ root, python });
    const first = await cache.ensure([]);
    const started = performance.now();
    const second = await new VenvCache({ root, python }).ensure([]);
    // Building one takes seconds; finding it, milliseconds (the bound leaves room for a loaded machine).
    expect(performance.now() - started).toBeLessThan(2000);
    expect(second).toEqual(first);
    expect(first.key).toMatch(/^[0-9a-f]{64}$/);
    expect(first.dir).toBe(join(root, first.key));
    expect(existsSync(first.python)).toBe(true);
  });

  it('builds once for concurrent callers; racing instances agree on one venv', async () => {
    const own = await mkdtemp(join(tmpdir(), 'tapyard-venvs-race-'));
    try {
      const a = new VenvCache({ root: own, python });
      const b = new VenvCache({ root: own, python });
      const venvs = await Promise.all([a.ensure([]), a.ensure([]), a.ensure([]), b.ensure([]), b.ensure([])]);
      expect(new Set(venvs.map((v) => v.dir)).size).toBe(1);
      expect(a.buildCount).toBeLessThanOrEqual(1);
      expect(b.buildCount).toBeLessThanOrEqual(1);
      expect(a.buildCount + b.buildCount).toBe(1);
      // The loser's build directory is gone; only the finished venv remains.
      expect(await readdir(own)).toEqual([venvs[0].key]);
    } finally {
      await rm(own, { recursive: true, force: true });
    }
  });

  it('installs a real package, readable but not writable by the sandbox', async () => {
    const cache = new VenvCache({ root, python });
    const venv = await cache.ensure(['SIX == 1.16.0 ', 'six==1.16.0']);
    expect(await cache.ensure(['six==1.16.0'])).toEqual(venv);
    expect(cache.buildCount).toBe(1);
    const mode = (await stat(join(venv.dir, 'lib', 'python3.11', 'site-packages', 'six.py'))).mode & 0o777;
    expect(mode).toBe(0o644);
    const sandbox = new PythonSandbox({
      bwrap: existsSync('/usr/bin/bwrap') ? 'require' : 'off',
      limits: { timeoutMs: 20_000 },
    });
    const { records, outcome } = await runScript(
      { sandbox, venv },
      py(
        'import six',
        'def fetch():',
        '    try:',
        '        open(six.__file__, "a").close()',
        '        writable = True',
        '    except OSError:',
        '        writable = False',
        '    return [{"version": six.__version__, "writable": writable}]',
      ),
    );
    expect(outcome.error).toBeNull();
    expect(records).toEqual([{ version: '1.16.0', writable: false }]);
  }, 60_000);

  it('names a package pip cannot find', async () => {
    const cache = new VenvCache({ root, python });
    const error = await cache.ensure(['six==1.16.0', NO_SUCH_PACKAGE]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PackageInstallError);
    const installError = error as PackageInstallError;
    expect(installError.message).toContain('could not install tapyard-no-such-package-xyz==1.0');
    expect(installError.packages).toEqual(['six==1.16.0', NO_SUCH_PACKAGE]);
    expect(installError.output).toContain('No matching distribution found');
    expect((await readdir(root)).filter((d) => d.startsWith('.build-'))).toEqual([]);
  }, 60_000);

  it('keeps index credentials out of errors', async () => {
    const previous = process.env.PIP_RETRIES;
    process.env.PIP_RETRIES = '0';
    try {
      const cache = new VenvCache({
        root,
        python,
        pipIndexUrl: 'http://tapyard:s3cr3t-pass@127.0.0.1:9/simple',
      });
      const error = (await cache.ensure([NO_SUCH_PACKAGE]).catch((e: unknown) => e)) as PackageInstallError;
      expect(error).toBeInstanceOf(PackageInstallError);
      expect(`${error.message}\n${error.output}`).not.toContain('s3cr3t-pass');
    } finally {
      if (previous === undefined) delete process.env.PIP_RETRIES;
      else process.env.PIP_RETRIES = previous;
    }
  }, 60_000);

  it.each([
    ['--index-url=http://evil'],
    ['../x'],
    ['git+https://github.com/pallets/flask'],
    ['-r', 'req.txt'],
  ])('refuses %j before running pip', async (...specs) => {
    const cache = new VenvCache({ root, python });
    await expect(cache.ensure(specs)).rejects.toBeInstanceOf(PackageSpecError);
    expect(cache.buildCount).toBe(0);
  });
});
