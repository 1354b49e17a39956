import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';

/**
 * scripts/build (`npm run build`, run again by `npm run up`) under a running process. A small project laid
 * out like this one is built by the real script; its "worker" loads files lazily the way the apps do (a
 * child process from a .js beside it, a Python file of libs/sandbox/python, resolved from __dirname).
 * While the project is rebuilt with other sources, the running process must keep loading its own build's
 * files, and `dist` must never be missing.
 */
const repo = join(__dirname, '..');
// Each test builds the small project two or three times: a bound for a loaded machine, not a schedule.
const BOUND_MS = 10 * 60_000;

function write(root: string, file: string, text: string): void {
  mkdirSync(dirname(join(root, file)), { recursive: true });
  writeFileSync(join(root, file), text);
}

function layProject(root: string): void {
  mkdirSync(join(root, 'scripts'), { recursive: true });
  copyFileSync(join(repo, 'scripts', 'build'), join(root, 'scripts', 'build'));
  mkdirSync(join(root, 'scripts', 'lib'));
  copyFileSync(join(repo, 'scripts', 'lib', 'node.sh'), join(root, 'scripts', 'lib', 'node.sh'));
  symlinkSync(realpathSync(join(repo, 'node_modules')), join(root, 'node_modules'));
  write(
    root,
    'tsconfig.json',
    JSON.stringify({
      compilerOptions: {
        module: 'commonjs',
        target: 'ES2022',
        strict: true,
        outDir: 'dist',
        rootDir: '.',
        baseUrl: '.',
        types: ['node'],
        // As in the project's own tsconfig: the declarations of @types/node are not checked again on
        // each of the nine builds (some 3 s of CPU each); the project's sources still are.
        skipLibCheck: true,
        paths: { '@fixture/*': ['libs/*/src'] },
      },
    }),
  );
  write(
    root,
    'tsconfig.build.json',
    JSON.stringify({ extends: './tsconfig.json', include: ['apps/**/*.ts', 'libs/**/*.ts'] }),
  );
  write(
    root,
    'apps/worker/src/main.ts',
    `import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { VERSION } from '@fixture/version';
// Each line on stdin: a child process from a file beside this one, then the Python file, both loaded now.
process.stdin.on('data', () => {
  const child = spawn(process.execPath, [join(__dirname, 'child.js')]);
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.on('exit', (code) => {
    let py = '';
    try {
      py = readFileSync(join(__dirname, '..', '..', '..', 'libs', 'sandbox', 'python', 'harness.py'), 'utf8').trim();
    } catch (e) {
      py = String(e);
    }
    process.stdout.write(JSON.stringify({ main: VERSION, child: out.trim(), code, py }) + '\\n');
  });
});
process.stdout.write('ready\\n');
`,
  );
  write(
    root,
    'apps/worker/src/child.ts',
    `import { VERSION } from '@fixture/version';\nprocess.stdout.write(VERSION);\n`,
  );
}

function setVersion(root: string, version: string): void {
  write(root, 'libs/version/src/index.ts', `export const VERSION = '${version}';\n`);
  write(root, 'libs/sandbox/python/harness.py', `${version}\n`);
}

function build(root: string): void {
  const r = spawnSync('bash', ['scripts/build'], { cwd: root, encoding: 'utf8', timeout: 300_000 });
  if (r.status !== 0) throw new Error(`scripts/build failed: ${r.stdout}${r.stderr}`);
}

interface Answer {
  main: string;
  child: string;
  code: number;
  py: string;
}

class Running {
  readonly child: ChildProcess;
  private readonly lines: string[] = [];
  private waiting?: () => void;

  constructor(root: string) {
    this.child = spawn(process.execPath, ['dist/apps/worker/src/main.js'], {
      cwd: root,
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      this.lines.push(line);
      this.waiting?.();
    });
  }

  private exited(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  private async next(): Promise<string> {
    while (this.lines.length === 0) {
      if (this.exited())
        throw new Error(`the process exited (${this.child.exitCode ?? this.child.signalCode})`);
      await new Promise<void>((resolve) => (this.waiting = resolve));
    }
    return this.lines.shift()!;
  }

  async ready(): Promise<void> {
    expect(await this.next()).toBe('ready');
  }

  async ask(): Promise<Answer> {
    this.child.stdin!.write('\n');
    return JSON.parse(await this.next()) as Answer;
  }

  async stop(): Promise<void> {
    if (this.exited()) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGTERM');
    await exited;
  }
}

describe('scripts/build: a new build beside the running one', () => {
  let root: string;
  const running: Running[] = [];

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'tapyard-build-'));
    layProject(root);
  });

  afterEach(async () => {
    for (const r of running.splice(0)) await r.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it(
    'a running process keeps loading its own build while the project is rebuilt, and dist is never missing',
    async () => {
      setVersion(root, 'one');
      build(root);
      const first = new Running(root);
      running.push(first);
      await first.ready();
      expect(await first.ask()).toEqual({ main: 'one', child: 'one', code: 0, py: 'one' });
      const firstBuild = realpathSync(join(root, 'dist'));

      setVersion(root, 'two');
      const rebuild = spawn('bash', ['scripts/build'], { cwd: root, stdio: 'ignore' });
      const rebuilt = new Promise<number | null>((resolve) => rebuild.once('exit', resolve));
      let done = false;
      void rebuilt.then(() => (done = true));
      // While the build runs (each round waits for an answer, so the loop ends with the build).
      let rounds = 0;
      while (!done) {
        expect(existsSync(join(root, 'dist', 'apps', 'worker', 'src', 'child.js'))).toBe(true);
        expect(await first.ask()).toEqual({ main: 'one', child: 'one', code: 0, py: 'one' });
        rounds += 1;
      }
      expect(await rebuilt).toBe(0);
      expect(rounds).toBeGreaterThan(0);

      // After it: the running process is still on its build; a new one starts on the new build.
      expect(realpathSync(join(root, 'dist'))).not.toBe(firstBuild);
      expect(await first.ask()).toEqual({ main: 'one', child: 'one', code: 0, py: 'one' });
      const second = new Running(root);
      running.push(second);
      await second.ready();
      expect(await second.ask()).toEqual({ main: 'two', child: 'two', code: 0, py: 'two' });
      expect(existsSync(firstBuild)).toBe(true);

      // A third build while both run keeps both of their builds.
      setVersion(root, 'three');
      build(root);
      expect(await first.ask()).toEqual({ main: 'one', child: 'one', code: 0, py: 'one' });
      expect(await second.ask()).toEqual({ main: 'two', child: 'two', code: 0, py: 'two' });
      expect(readdirSync(join(root, '.builds'))).toHaveLength(3);
    },
    BOUND_MS,
  );

  it(
    'builds no running process uses are removed; the current one stays',
    async () => {
      setVersion(root, 'one');
      build(root);
      const first = new Running(root);
      running.push(first);
      await first.ready();
      const firstBuild = readlinkSync(join(root, 'dist'));
      setVersion(root, 'two');
      build(root);
      expect(existsSync(join(root, firstBuild))).toBe(true);

      await first.stop();
      setVersion(root, 'three');
      build(root);
      const current = readlinkSync(join(root, 'dist'));
      expect(readdirSync(join(root, '.builds')).map((n) => `.builds/${n}`)).toEqual([current]);
    },
    BOUND_MS,
  );

  it(
    'a dist directory from before builds were links becomes a build of its own; dist becomes the link',
    () => {
      setVersion(root, 'one');
      write(root, 'dist/apps/worker/src/old.js', '');
      build(root);
      expect(lstatSync(join(root, 'dist')).isSymbolicLink()).toBe(true);
      expect(existsSync(join(root, 'dist', 'apps', 'worker', 'src', 'main.js'))).toBe(true);
      // No process runs the old directory's files: it is removed like any unused build.
      expect(readdirSync(join(root, '.builds'))).toHaveLength(1);
    },
    BOUND_MS,
  );

  it(
    'TAPYARD_BUILD_TYPECHECKED=1 (npm test, whose type check runs beside the build) only emits: a type error is left to that check',
    () => {
      setVersion(root, 'one');
      write(root, 'libs/version/src/index.ts', 'export const VERSION: number = "emitted anyway";\n');
      const r = spawnSync('bash', ['scripts/build'], {
        cwd: root,
        encoding: 'utf8',
        timeout: 300_000,
        env: { ...process.env, TAPYARD_BUILD_TYPECHECKED: '1' },
      });
      expect(r.status).toBe(0);
      expect(
        spawnSync(process.execPath, ['-p', "require('./dist/libs/version/src').VERSION"], {
          cwd: root,
          encoding: 'utf8',
        }).stdout.trim(),
      ).toBe('emitted anyway');
    },
    BOUND_MS,
  );

  it(
    'a failed build leaves dist as it was and nothing behind',
    () => {
      setVersion(root, 'one');
      build(root);
      const before = readlinkSync(join(root, 'dist'));
      write(root, 'libs/version/src/index.ts', 'export const VERSION: number = "not a number";\n');
      const r = spawnSync('bash', ['scripts/build'], { cwd: root, encoding: 'utf8', timeout: 300_000 });
      expect(r.status).not.toBe(0);
      expect(readlinkSync(join(root, 'dist'))).toBe(before);
      expect(readdirSync(join(root, '.builds')).map((n) => `.builds/${n}`)).toEqual([before]);
      expect(readdirSync(root).filter((n) => n.startsWith('dist.'))).toEqual([]);
    },
    BOUND_MS,
  );
});
