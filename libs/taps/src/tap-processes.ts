import { Inject, Injectable } from '@nestjs/common';
import { mkdir } from 'node:fs/promises';
import { runKeyMayCall } from '@tapyard/auth';
import { CONFIG, TapyardConfig, ValidationError } from '@tapyard/core';
import { EgressPolicy, EgressProxy } from '@tapyard/egress';
import {
  IsolationMode,
  PackageInstallError,
  PackageSpecError,
  PythonSandbox,
  RecordChunk,
  SandboxError,
  Venv,
  VenvCache,
  maskSecrets,
  normalizePackageSpecs,
  resolveInterpreter,
  scriptFactsOf,
  writeScript,
} from '@tapyard/sandbox';
import { TapConfig } from './tap.types';
import { TapErrorCode } from './tap-errors';

/** How a script run ended, as the run result reports it (secrets already masked). */
export interface ScriptOutcome {
  logs: string;
  error: string | null;
  durationMs: number;
  /** The isolation the script ran under; null when it never started (e.g. pip failed). */
  isolation: IsolationMode | null;
  /** The state a fetch(state) left, when it succeeded (see start's `state`). */
  state?: Record<string, unknown>;
}

/** Refusals of the egress proxy noted in a run's logs; more only add noise. */
const EGRESS_NOTES = 20;

/** Where scripts reach the platform (SERVICE_PLATFORM_HOST/PORT): the one private endpoint always allowed. */
export function platformEndpoint(config: TapyardConfig): { host: string; port: number } {
  return { host: config.host === '0.0.0.0' ? '127.0.0.1' : config.host, port: config.port };
}

/** A started script: records to consume (the script waits while nobody reads), then the outcome. */
export interface ScriptRun {
  chunks: AsyncIterable<RecordChunk>;
  done: Promise<ScriptOutcome>;
  /** Stops the run; the outcome reports `reason` (default: stopped by the caller). */
  kill(reason?: SandboxError): void;
}

/**
 * Starts tap scripts: the tap's virtual environment (made once per package set, shared), the
 * script in a directory of its own, and the sandbox with the configured limits.
 */
@Injectable()
export class TapProcesses {
  private readonly sandbox: PythonSandbox;
  private readonly egress: EgressPolicy;
  private venvs: Promise<VenvCache> | null = null;

  constructor(@Inject(CONFIG) private readonly config: TapyardConfig) {
    const t = config.taps;
    this.sandbox = new PythonSandbox({
      bwrap: t.sandbox,
      uids: t.sandboxUids,
      limits: {
        timeoutMs: t.timeoutMs,
        cpuSeconds: t.cpuSeconds,
        memoryBytes: t.memoryBytes,
        maxProcesses: t.maxProcesses,
        maxLogBytes: t.maxLogBytes,
        maxOutputBytes: t.maxOutputBytes,
      },
    });
    this.egress = new EgressPolicy([...config.egressAllow, platformEndpoint(config)]);
  }

  /** The isolation runs get now; throws, saying why, when the sandbox is required but unusable. */
  isolation(): Promise<IsolationMode> {
    return this.sandbox.isolation();
  }

  /** Refuses package specs pip must never see (URLs, paths, options), naming the offending one. */
  checkPackages(packages: readonly string[]): void {
    try {
      normalizePackageSpecs(packages);
    } catch (err) {
      if (err instanceof PackageSpecError)
        throw new ValidationError(err.message, [{ field: 'packages', problem: err.message }]).coded(
          TapErrorCode.InvalidPackages,
        );
      throw err;
    }
  }

  /**
   * `environment`: the one the run acts in, whose TAP_EGRESS_ALLOW entries its script may reach. `rows`:
   * structured records checked and keyed by the harness, passed on as text only. `state`: the tap's
   * committed state, for a fetch(state) (see harness.py).
   */
  async start(
    environment: string,
    tap: TapConfig,
    script: string,
    env: Record<string, string>,
    secrets: string[],
    rows = false,
    state?: Record<string, unknown>,
  ): Promise<ScriptRun> {
    const started = Date.now();
    let venv: Venv;
    try {
      venv = await (await this.cache()).ensure(tap.packages);
    } catch (err) {
      if (!(err instanceof PackageInstallError) && !(err instanceof PackageSpecError)) throw err;
      const output = err instanceof PackageInstallError ? err.output : '';
      return finished({
        logs: maskSecrets(output, secrets),
        error: err.message,
        durationMs: Date.now() - started,
        isolation: null,
      });
    }
    // The file name shows in tracebacks, so it is the tap's (as a valid module name).
    const file = await writeScript(script, {
      fileName: `${tap.name.replace(/[^A-Za-z0-9_]/g, '_').replace(/^(\d)/, '_$1')}.py`,
    });
    const refusals: string[] = [];
    // With the sandbox off the operator chose the host's network: there is nothing to proxy.
    const proxy =
      this.config.taps.sandbox === 'off'
        ? null
        : await EgressProxy.open({
            policy: this.egress.for(environment),
            platform: { ...platformEndpoint(this.config), allows: runKeyMayCall },
            onRefused: (m) => refusals.length < EGRESS_NOTES && refusals.push(m),
          });
    const handle = this.sandbox.run({
      scriptPath: file.path,
      python: venv.python,
      venvDir: venv.dir,
      env,
      secrets,
      rows,
      egressSocket: proxy?.socketPath,
      state,
    });
    const done = handle.outcome.then(async (o) => {
      await Promise.all([file.remove().catch(() => undefined), proxy?.close().catch(() => undefined)]);
      // A host name can carry a secret the script put there: the notes are masked like the logs.
      const notes = refusals.map((m) => `[tapyard] egress: ${m}\n`).join('');
      return {
        logs: o.logs + maskSecrets(notes, secrets),
        error: o.error ? failureText(o.error) : null,
        durationMs: Date.now() - started,
        isolation: o.isolation,
        ...(o.state ? { state: o.state } : {}),
      };
    });
    return {
      chunks: handle.chunks({ parse: !rows }),
      done,
      kill: (reason) => handle.kill(reason),
    };
  }

  /**
   * Where the script does not parse (`line N: reason`), from Python's own parser, nothing run; null
   * when it parses, or when the parser could not answer within its bounds (the run will say).
   */
  async syntaxError(script: string): Promise<{ line: number | null; reason: string } | null> {
    const r = await scriptFactsOf(await resolveInterpreter(this.config.taps.python), script);
    if ('problem' in r || r.facts.syntaxError === null) return null;
    const m = /^line (\d+): /.exec(r.facts.syntaxError);
    return { line: m ? Number(m[1]) : null, reason: r.facts.syntaxError };
  }

  private cache(): Promise<VenvCache> {
    this.venvs ??= (async () => {
      const root = this.config.taps.venvDir;
      await mkdir(root, { recursive: true, mode: 0o755 });
      return new VenvCache({ root, python: await resolveInterpreter(this.config.taps.python) });
    })();
    this.venvs.catch(() => (this.venvs = null));
    return this.venvs;
  }
}

function finished(outcome: ScriptOutcome): ScriptRun {
  return {
    chunks: (async function* (): AsyncGenerator<RecordChunk> {})(),
    done: Promise.resolve(outcome),
    kill: () => undefined,
  };
}

/**
 * The run result's `error`: the harness's sentence, then what points into the script: the offending
 * line of a syntax error, or the script's own frames (file and line; other files never show).
 */
function failureText(err: SandboxError): string {
  const { text, traceback } = err.details;
  if (traceback)
    return `${err.message}\nTraceback (the script's frames, most recent call last):\n${traceback}`;
  if (err.kind === 'syntax' && text) return `${err.message}\n    ${text.trim()}`;
  return err.message;
}
