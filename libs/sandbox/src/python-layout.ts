import { execFile } from 'node:child_process';
import { inherited, share } from './thread-probes';

/** Where an interpreter's files really live: the sandbox must mount them at the same paths. */
export interface PythonLayout {
  basePrefix: string;
  baseExecPrefix: string;
  /** The interpreter binary with symlinks resolved. */
  executable: string;
}

const PROBE = [
  'import json, os, sys',
  'print(json.dumps([sys.base_prefix, sys.base_exec_prefix, os.path.realpath(sys.executable)]))',
].join('\n');
const PROBE_TIMEOUT_MS = 15_000;
const layouts = new Map<string, Promise<PythonLayout>>();

/**
 * Asks the interpreter once per path (-E -S keep the probe independent of env and site), or takes the
 * answer a thread started before this one got (thread-probes.ts).
 */
export function pythonLayout(python: string): Promise<PythonLayout> {
  let layout = layouts.get(python);
  if (!layout) {
    const known = inherited('python', python);
    layout = isLayout(known)
      ? Promise.resolve(known)
      : probe(python).then((found) => {
          share('python', python, found);
          return found;
        });
    layouts.set(python, layout);
    layout.catch(() => layouts.delete(python));
  }
  return layout;
}

function isLayout(v: unknown): v is PythonLayout {
  if (typeof v !== 'object' || v === null) return false;
  const l = v as Record<string, unknown>;
  return [l.basePrefix, l.baseExecPrefix, l.executable].every((p) => typeof p === 'string');
}

function probe(python: string): Promise<PythonLayout> {
  return new Promise((resolvePromise, reject) => {
    execFile(
      python,
      ['-E', '-S', '-c', PROBE],
      { env: {}, timeout: PROBE_TIMEOUT_MS, encoding: 'utf8' },
      (err, stdout) => {
        if (err) return reject(new Error(`cannot run the interpreter ${python}: ${err.message}`));
        const parsed: unknown = JSON.parse(stdout);
        if (!Array.isArray(parsed) || parsed.length !== 3 || !parsed.every((p) => typeof p === 'string')) {
          return reject(new Error(`unexpected answer from the interpreter ${python}`));
        }
        const [basePrefix, baseExecPrefix, executable] = parsed as string[];
        resolvePromise({ basePrefix, baseExecPrefix, executable });
      },
    );
  });
}
