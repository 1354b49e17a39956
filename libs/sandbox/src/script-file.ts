import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ScriptFile {
  /** The per-run directory holding only this script. */
  dir: string;
  path: string;
  remove(): Promise<void>;
}

export interface WriteScriptOptions {
  /** Where the per-run directory is created; it must be traversable by the sandbox user. */
  parentDir?: string;
  /** Shown in tracebacks; defaults to tap.py. */
  fileName?: string;
}

/**
 * Writes a tap script into a fresh directory of its own, readable (not writable) by the
 * sandbox user: mkdtemp creates 0700 and the process umask may strip bits, so modes are set
 * explicitly.
 */
export async function writeScript(source: string, options: WriteScriptOptions = {}): Promise<ScriptFile> {
  const fileName = options.fileName ?? 'tap.py';
  if (!/^[A-Za-z_][A-Za-z0-9_]*\.py$/.test(fileName)) {
    throw new TypeError(`invalid script file name "${fileName}"`);
  }
  const dir = await mkdtemp(join(options.parentDir ?? tmpdir(), 'tapyard-tap-'));
  const path = join(dir, fileName);
  await writeFile(path, source, { mode: 0o644 });
  await chmod(path, 0o644);
  await chmod(dir, 0o755);
  return { dir, path, remove: () => rm(dir, { recursive: true, force: true }) };
}
