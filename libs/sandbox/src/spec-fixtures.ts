/* Shared by the sandbox specs only (kept out of index.ts). */
import { accessSync, constants, existsSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveInterpreter } from './interpreter';
import { RunOutcome } from './run-handle';
import { PythonSandbox, PythonSandboxOptions, RunRequest } from './sandbox';
import { writeScript } from './script-file';
import { Venv, VenvCache } from './venvs';

export type SpecMode = 'bwrap' | 'off';

/**
 * Without bwrap, a root platform runs scripts as nobody, who cannot reach a pyenv interpreter
 * under /root: those specs use the system interpreter instead.
 */
const SYSTEM_PYTHON = '/usr/bin/python3';
const isRoot = process.getuid?.() === 0;
export const offModeAvailable = !isRoot || (existsSync(SYSTEM_PYTHON) && readable(SYSTEM_PYTHON));

function readable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function specPython(mode: SpecMode): Promise<string> {
  if (mode === 'off' && isRoot) return Promise.resolve(SYSTEM_PYTHON);
  return resolveInterpreter(process.env.TAPYARD_SANDBOX_PYTHON ?? 'python3');
}

export interface SandboxFixture {
  mode: SpecMode;
  sandbox: PythonSandbox;
  venv: Venv;
  venvs: VenvCache;
  root: string;
  close(): Promise<void>;
}

export async function sandboxFixture(
  mode: SpecMode,
  options: Omit<PythonSandboxOptions, 'bwrap'> = {},
): Promise<SandboxFixture> {
  const root = await mkdtemp(join(tmpdir(), 'tapyard-venvs-'));
  await chmod(root, 0o755);
  const venvs = new VenvCache({ root, python: await specPython(mode) });
  const venv = await venvs.ensure([]);
  const sandbox = new PythonSandbox({ ...options, bwrap: mode === 'bwrap' ? 'require' : 'off' });
  return { mode, sandbox, venv, venvs, root, close: () => rm(root, { recursive: true, force: true }) };
}

export interface ScriptResult {
  records: unknown[];
  outcome: RunOutcome;
}

export async function runScript(
  fixture: Pick<SandboxFixture, 'sandbox' | 'venv'>,
  source: string,
  request: Partial<RunRequest> = {},
): Promise<ScriptResult> {
  const script = await writeScript(source);
  try {
    const handle = fixture.sandbox.run({
      scriptPath: script.path,
      python: fixture.venv.python,
      venvDir: fixture.venv.dir,
      ...request,
    });
    const records: unknown[] = [];
    for await (const record of handle) records.push(record);
    return { records, outcome: await handle.outcome };
  } finally {
    await script.remove();
  }
}

/** Python source from lines, so specs read like the scripts they run. */
export const py = (...lines: string[]): string => `${lines.join('\n')}\n`;
