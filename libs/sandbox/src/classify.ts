import { constants } from 'node:os';
import { SandboxError, SandboxErrorDetails, SandboxErrorKind } from './errors';
import { formatBytes, RunLimits } from './limits';
import { maskSecrets } from './masking';
import { ControlMessage } from './record-parser';

type HarnessError = Extract<ControlMessage, { type: 'error' }>;

const PASSTHROUGH: ReadonlySet<string> = new Set<SandboxErrorKind>([
  'no_fetch',
  'syntax',
  'import',
  'fetch_raised',
  'not_iterable',
  'not_json',
  'not_row',
  'bad_state',
]);

/** The harness's own report, with secrets masked in everything the script could influence. */
export function harnessError(
  control: HarnessError,
  limits: RunLimits,
  secrets: readonly string[],
): SandboxError {
  const mask = (s: string): string => maskSecrets(s, secrets);
  if (control.kind === 'memory') return memoryLimitError(limits);
  if (control.kind === 'internal') {
    return new SandboxError('spawn_failed', `the sandbox could not start: ${mask(control.message)}`);
  }
  if (!PASSTHROUGH.has(control.kind)) {
    return new SandboxError('crashed', `the harness reported an unknown failure: ${mask(control.message)}`);
  }
  const details: SandboxErrorDetails = {};
  if (typeof control.line === 'number') details.line = control.line;
  if (typeof control.record === 'number') details.record = control.record;
  if (typeof control.text === 'string') details.text = mask(control.text);
  if (typeof control.module === 'string') details.module = control.module;
  if (typeof control.exception === 'string') details.exception = control.exception;
  if (typeof control.traceback === 'string') details.traceback = mask(control.traceback);
  return new SandboxError(control.kind as SandboxErrorKind, mask(control.message), details);
}

export function memoryLimitError(limits: RunLimits): SandboxError {
  return new SandboxError(
    'memory_limit',
    `the script used more than ${formatBytes(limits.memoryBytes)} of memory`,
    {
      limit: limits.memoryBytes,
    },
  );
}

export interface EndOfProcess {
  signal: NodeJS.Signals | null;
  /** Why the script ended when the harness could not say (no control line arrived). */
  error(limits: RunLimits, logHead: string, secrets: readonly string[]): SandboxError;
}

/** bwrap's pid 1 relays a child killed by signal n as exit code 128 + n. */
export function classifyEnd(
  exit: { code: number | null; signal: NodeJS.Signals | null },
  isolation: 'bwrap' | 'none' | null,
): EndOfProcess {
  const relayed =
    isolation === 'bwrap' && exit.code !== null && exit.code > 128 ? signalName(exit.code - 128) : null;
  const signal = exit.signal ?? relayed;
  return {
    signal,
    error(limits, logHead, secrets) {
      const details: SandboxErrorDetails = {};
      if (signal) details.signal = signal;
      if (exit.code !== null) details.exitCode = exit.code;
      if (signal === 'SIGXCPU') {
        return new SandboxError(
          'cpu_limit',
          `the script used more than ${limits.cpuSeconds} s of CPU time and was stopped`,
          {
            ...details,
            limit: limits.cpuSeconds,
          },
        );
      }
      if (isolation === 'bwrap' && logHead.startsWith('bwrap: ')) {
        const reason = maskSecrets(logHead.split('\n')[0].slice(7), secrets);
        return new SandboxError('spawn_failed', `the sandbox could not start: ${reason}`);
      }
      if (signal === 'SIGKILL') {
        return new SandboxError('crashed', 'the script was killed (SIGKILL) before finishing', details);
      }
      if (signal) return new SandboxError('crashed', `the script crashed (${signal})`, details);
      return new SandboxError(
        'crashed',
        `the script exited with code ${exit.code} before finishing`,
        details,
      );
    },
  };
}

function signalName(n: number): NodeJS.Signals | null {
  const entry = Object.entries(constants.signals).find(([, value]) => value === n);
  return entry ? (entry[0] as NodeJS.Signals) : null;
}
