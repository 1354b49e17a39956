import { spawn } from 'node:child_process';

const TIMEOUT_MS = 15_000;
const MAX_OUTPUT = 1_000_000;

/**
 * Runs a platform-owned Python script that reads a user's source on stdin and prints one JSON object of
 * facts about its syntax tree. The interpreter is isolated (`-I`: no user site, no environment) and
 * bounded in time and output; nothing of the source is run or imported. Resolves with the parsed
 * object, or with the reason there is none (a source too hostile to parse within the bound).
 */
export function pythonFacts(
  python: string,
  factsScript: string,
  source: string,
): Promise<{ facts: Record<string, unknown> } | { problem: string }> {
  return new Promise((done, fail) => {
    const child = spawn(python, ['-I', factsScript], {
      stdio: ['pipe', 'pipe', 'pipe'],
      timeout: TIMEOUT_MS,
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      if (out.length < MAX_OUTPUT) out += c;
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      if (err.length < 10_000) err += c;
    });
    child.on('error', fail);
    child.on('close', (code, signal) => {
      if (code !== 0) {
        const why = signal ? `was stopped (${signal})` : `failed: ${err.trim().split('\n').pop() ?? ''}`;
        done({ problem: `the script could not be checked: the parser ${why}` });
        return;
      }
      try {
        const facts = JSON.parse(out) as unknown;
        if (typeof facts === 'object' && facts !== null && !Array.isArray(facts))
          done({ facts: facts as Record<string, unknown> });
        else done({ problem: 'the script could not be checked: the parser gave no answer' });
      } catch {
        done({ problem: 'the script could not be checked: the parser gave no answer' });
      }
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(source);
  });
}
