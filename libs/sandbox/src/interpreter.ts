import { execFile } from 'node:child_process';

const resolved = new Map<string, Promise<string>>();

/**
 * The real interpreter behind a command such as `python3`, which may be a slow shim (pyenv
 * starts bash first). Resolve once at startup and pass the path to VenvCache.
 */
export function resolveInterpreter(command = 'python3'): Promise<string> {
  let path = resolved.get(command);
  if (!path) {
    path = new Promise((resolve, reject) => {
      execFile(command, ['-c', 'import sys; print(sys.executable)'], { timeout: 30_000 }, (err, stdout) => {
        const executable = String(stdout).trim();
        if (err || !executable.startsWith('/')) {
          reject(new Error(`cannot find the interpreter behind "${command}": ${err?.message ?? executable}`));
        } else {
          resolve(executable);
        }
      });
    });
    resolved.set(command, path);
    path.catch(() => resolved.delete(command));
  }
  return path;
}
