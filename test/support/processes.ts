import { ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, realpathSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

const ROOT = join(__dirname, '..', '..');

let testWorker: string | undefined;

/**
 * The test worker's entry (test-worker.ts: the worker app with the hooks its production module leaves
 * unset), transpiled into the current build beside the app it boots; the build compiles apps and libs
 * only. Returns its path relative to the repository (under dist/).
 */
export function testWorkerMain(): string {
  if (testWorker !== undefined) return testWorker;
  const source = join(__dirname, 'test-worker.ts');
  const { outputText } = ts.transpileModule(readFileSync(source, 'utf8'), {
    fileName: source,
    compilerOptions: {
      module: ts.ModuleKind.CommonJS,
      target: ts.ScriptTarget.ES2022,
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
      esModuleInterop: true,
    },
  });
  const dir = join(realpathSync(join(ROOT, 'dist')), 'test', 'support');
  mkdirSync(dir, { recursive: true });
  // Suites in parallel write the same text: each writes its own file and renames it into place.
  const scratch = join(dir, `test-worker.js.${process.pid}`);
  writeFileSync(scratch, outputText);
  renameSync(scratch, join(dir, 'test-worker.js'));
  testWorker = join('dist', 'test', 'support', 'test-worker.js');
  return testWorker;
}

export interface Spawned {
  child: ChildProcess;
  output(): string;
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  exited: Promise<number | null>;
  /** A worker's operations port, from its `worker http listening on` line. */
  httpPort(): Promise<number>;
}

/**
 * Runs a built app (`npm run build` first; `npm test` does) as its own process. Workers get an
 * ephemeral operations port unless the test names one: tests run several workers at once. A
 * `test-worker` is the worker with the test hooks (test-worker.ts): TAPYARD_TEST_SPIN_ON in its
 * environment, and pings held in flight for their payload's `holdMs`. `nodeArgs` go to node before
 * the entry point (a `--require` preload that observes the process).
 */
export function spawnApp(
  app: 'api' | 'worker' | 'test-worker',
  env: Record<string, string | undefined>,
  nodeArgs: string[] = [],
): Spawned {
  const worker = app !== 'api';
  const ports = worker && !('WORKER_HTTP_PORT' in env) ? { WORKER_HTTP_PORT: '0' } : {};
  const main = app === 'test-worker' ? testWorkerMain() : join('dist', 'apps', app, 'src', 'main.js');
  const child = spawn(process.execPath, [...nodeArgs, join(ROOT, main)], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...ports, ...env } as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const waitFor = async (pattern: RegExp, timeoutMs = 120_000) => {
    const start = Date.now();
    while (!pattern.test(out)) {
      if (child.exitCode !== null)
        throw new Error(`${app} exited (${child.exitCode}) before ${pattern}:\n${out}`);
      if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${pattern}:\n${out}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const listening = /worker http listening on [^\s"]+:(\d+)/;
  return {
    child,
    output: () => out,
    exited,
    waitFor,
    httpPort: async () => {
      await waitFor(listening);
      return Number(listening.exec(out)?.[1]);
    },
  };
}
