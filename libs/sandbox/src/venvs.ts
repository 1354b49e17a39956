import { createHash } from 'node:crypto';
import {
  chmod,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  writeFile,
} from 'node:fs/promises';
import { join } from 'node:path';
import { PackageInstallError } from './errors';
import { normalizePackageSpecs } from './package-specs';
import { lastLines, pipFailureMessage, PipResult, runCommand } from './pip';

export interface VenvCacheOptions {
  /** Holds one directory per package set; must be traversable by the sandbox user. */
  root: string;
  /** The base interpreter venvs are created from (and whose pip installs into them). */
  python: string;
  pipTimeoutMs?: number;
  /** Passed to pip through the environment, so credentials never show in a process list. */
  pipIndexUrl?: string;
  /**
   * pip runs outside the sandbox, as the platform user: building an sdist would execute the
   * package's code there. Off by default, so only wheels are installed.
   */
  allowSourceBuilds?: boolean;
}

export interface Venv {
  python: string;
  dir: string;
  key: string;
}

/** Present only in complete venvs: written before the atomic rename into place. */
const MARKER = '.tapyard-venv.json';
const DEFAULT_PIP_TIMEOUT_MS = 5 * 60_000;
const VENV_TIMEOUT_MS = 60_000;
const OUTPUT_LINES = 15;

/**
 * One venv per distinct package set, built once and then shared. Builds happen in a private
 * directory that is renamed into place, so other processes never see a half-built venv; when
 * two race, the loser drops its build and uses the winner's.
 */
export class VenvCache {
  private readonly inflight = new Map<string, Promise<Venv>>();
  private builds = 0;

  constructor(private readonly options: VenvCacheOptions) {}

  /** Venvs this instance built (not counting ones found ready or built by others). */
  get buildCount(): number {
    return this.builds;
  }

  /** Throws PackageSpecError for refused specs and PackageInstallError when pip fails. */
  async ensure(packages: readonly string[]): Promise<Venv> {
    const specs = normalizePackageSpecs(packages);
    const key = createHash('sha256')
      .update(JSON.stringify({ python: this.options.python, packages: specs }))
      .digest('hex');
    let venv = this.inflight.get(key);
    if (!venv) {
      venv = this.find(key, specs);
      this.inflight.set(key, venv);
      // A failed build may succeed later (index outage): forget it.
      venv.catch(() => this.inflight.delete(key));
    }
    return venv;
  }

  private async find(key: string, specs: string[]): Promise<Venv> {
    const dir = join(this.options.root, key);
    const venv = { python: join(dir, 'bin', 'python'), dir, key };
    if (await exists(join(dir, MARKER))) return venv;
    await this.build(dir, specs);
    return venv;
  }

  private async build(dir: string, specs: string[]): Promise<void> {
    const { root, python } = this.options;
    await mkdir(root, { recursive: true, mode: 0o755 });
    await chmod(root, 0o755);
    const tmp = await mkdtemp(join(root, '.build-'));
    try {
      const created = await this.run(['-m', 'venv', '--without-pip', tmp], VENV_TIMEOUT_MS);
      if (created.code !== 0) {
        throw new Error(`could not create a venv with ${python}: ${lastLines(created.output, 3)}`);
      }
      if (specs.length) await this.install(tmp, specs);
      await relocate(tmp, dir);
      await makeReadable(tmp);
      await writeFile(join(tmp, MARKER), `${JSON.stringify({ python, packages: specs })}\n`, { mode: 0o644 });
      try {
        await rename(tmp, dir);
        this.builds += 1;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if ((code !== 'ENOTEMPTY' && code !== 'EEXIST') || !(await exists(join(dir, MARKER)))) throw err;
      }
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  }

  private async install(tmp: string, specs: string[]): Promise<void> {
    const timeoutMs = this.options.pipTimeoutMs ?? DEFAULT_PIP_TIMEOUT_MS;
    const wheelsOnly = !this.options.allowSourceBuilds;
    const args = ['-m', 'pip', '--python', join(tmp, 'bin', 'python'), 'install'];
    args.push('--disable-pip-version-check', '--no-input', '--no-warn-script-location', '--progress-bar=off');
    args.push('--root-user-action=ignore');
    if (wheelsOnly) args.push('--only-binary=:all:');
    const result = await this.run([...args, ...specs], timeoutMs);
    if (result.code === 0) return;
    const message = pipFailureMessage(result, specs, timeoutMs, wheelsOnly);
    throw new PackageInstallError(message, specs, lastLines(result.output, OUTPUT_LINES));
  }

  private run(args: string[], timeoutMs: number): Promise<PipResult> {
    const secrets = indexSecrets(this.options.pipIndexUrl);
    return runCommand(this.options.python, args, this.pipEnv(), timeoutMs, secrets);
  }

  /** The platform's environment (proxies, CA bundles), minus what would redirect Python or pip. */
  private pipEnv(): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) {
      if (
        !/^(PYTHONPATH|PYTHONHOME|PYTHONSTARTUP|PYTHONDONTWRITEBYTECODE|PIP_INDEX_URL|PIP_PYTHON)$/.test(k)
      ) {
        env[k] = v;
      }
    }
    if (this.options.pipIndexUrl) env.PIP_INDEX_URL = this.options.pipIndexUrl;
    return env;
  }
}

function indexSecrets(url: string | undefined): string[] {
  if (!url) return [];
  try {
    const parsed = new URL(url);
    return [parsed.password, decodeURIComponent(parsed.password), parsed.username].filter(
      (s) => s.length >= 3,
    );
  } catch {
    return [];
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Scripts pip generated in bin/ and pyvenv.cfg name the build directory; point them at the
 * final one. (The interpreter itself finds its prefix from its own location.)
 */
async function relocate(tmp: string, dir: string): Promise<void> {
  const bin = join(tmp, 'bin');
  const files = [join(tmp, 'pyvenv.cfg'), ...(await readdir(bin)).map((f) => join(bin, f))];
  for (const file of files) {
    const info = await lstat(file);
    if (!info.isFile() || info.size > 1024 * 1024) continue;
    const text = await readFile(file, 'latin1');
    if (text.includes(tmp)) await writeFile(file, text.split(tmp).join(dir), 'latin1');
  }
}

/** The sandbox user reads the venv but never writes it, whatever the umask was. */
async function makeReadable(dir: string): Promise<void> {
  await chmod(dir, 0o755);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await makeReadable(path);
    else if (entry.isFile()) await chmod(path, (await stat(path)).mode & 0o111 ? 0o755 : 0o644);
  }
}
