import { spawn } from 'node:child_process';
import { formatDuration } from './limits';
import { normalizeName, packageName, redact } from './package-specs';

export interface PipResult {
  code: number | null;
  /** The tail of stdout+stderr, credentials redacted. */
  output: string;
  timedOut: boolean;
}

/** pip can print a lot (dependency resolution); only the tail matters for errors. */
const OUTPUT_TAIL_BYTES = 64 * 1024;

export function runCommand(
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
  secrets: readonly string[],
): Promise<PipResult> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let tail = Buffer.alloc(0);
    let timedOut = false;
    const keep = (chunk: Buffer): void => {
      tail = Buffer.concat([tail, chunk]);
      if (tail.length > OUTPUT_TAIL_BYTES) tail = tail.subarray(tail.length - OUTPUT_TAIL_BYTES);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    const done = (code: number | null, extra = ''): void => {
      clearTimeout(timer);
      resolve({ code, output: scrub(tail.toString('utf8') + extra, secrets), timedOut });
    };
    child.once('error', (err) => done(null, `\n${err.message}`));
    child.once('close', (code) => done(code));
  });
}

export function scrub(text: string, secrets: readonly string[]): string {
  let out = redact(text);
  for (const secret of secrets) if (secret.length >= 3) out = out.split(secret).join('***');
  return out;
}

/** The last lines, for error messages. */
export function lastLines(text: string, count: number): string {
  return text.trimEnd().split('\n').slice(-count).join('\n');
}

/**
 * The requested packages pip reported as unavailable, from its two messages for that:
 * "Could not find a version that satisfies the requirement X" and "No matching distribution found for X".
 */
export function unavailablePackages(output: string, specs: readonly string[]): string[] {
  const pattern = /(?:No matching distribution found for|satisfies the requirement) ([^\s;(]+)/g;
  const names = new Set<string>();
  for (const match of output.matchAll(pattern)) {
    const name = /^[A-Za-z0-9._-]+/.exec(match[1])?.[0];
    if (name) names.add(normalizeName(name));
  }
  const requested = specs.filter((s) => names.has(packageName(s)));
  // A missing dependency of a requested package is named as pip named it.
  const others = [...names].filter((n) => !specs.some((s) => packageName(s) === n));
  return [...requested, ...others];
}

export function pipFailureMessage(
  result: PipResult,
  specs: readonly string[],
  timeoutMs: number,
  wheelsOnly: boolean,
): string {
  if (result.timedOut)
    return `pip did not finish installing ${specs.join(', ')} within ${formatDuration(timeoutMs)}`;
  const missing = unavailablePackages(result.output, specs);
  if (missing.length) {
    const hint = wheelsOnly ? ' (only prebuilt wheels are installed)' : '';
    return `could not install ${missing.join(', ')}: no matching distribution found${hint}`;
  }
  const errorLine = result.output.split('\n').find((l) => l.startsWith('ERROR:'));
  const why = errorLine ? `: ${errorLine.slice(6).trim()}` : '';
  return `pip could not install ${specs.join(', ')} (exit code ${result.code})${why}`;
}
