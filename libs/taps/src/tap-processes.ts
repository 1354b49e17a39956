import { Inject, Injectable } from '@nestjs/common';
import { mkdir } from 'node:fs/promises';
import { CONFIG, TapyardConfig, ValidationError } from '@tapyard/core';
import {
  PackageInstallError,
  PackageSpecError,
  PythonSandbox,
  RecordChunk,
  Venv,
  VenvCache,
  maskSecrets,
  normalizePackageSpecs,
  resolveInterpreter,
  writeScript,
} from '@tapyard/sandbox';
import { TapConfig } from './tap.types';

/** How a script run ended, as the run result reports it (secrets already masked). */
export interface ScriptOutcome {
  logs: string;
  error: string | null;
  durationMs: number;
}

/** A started script: records to consume (the script waits while nobody reads), then the outcome. */
export interface ScriptRun {
  chunks: AsyncIterable<RecordChunk>;
  done: Promise<ScriptOutcome>;
  kill(): void;
}

/**
 * Starts tap scripts: the tap's virtual environment (made once per package set, shared), the
 * script in a directory of its own, and the sandbox with the configured limits.
 */
@Injectable()
export class TapProcesses {
  private readonly sandbox: PythonSandbox;
  private venvs: Promise<VenvCache> | null = null;

  constructor(@Inject(CONFIG) private readonly config: TapyardConfig) {
    const t = config.taps;
    this.sandbox = new PythonSandbox({
      bwrap: t.sandbox === 'off' ? 'off' : t.sandbox,
      limits: {
        timeoutMs: t.timeoutMs,
        cpuSeconds: t.cpuSeconds,
        memoryBytes: t.memoryBytes,
        maxProcesses: t.maxProcesses,
        maxLogBytes: t.maxLogBytes,
        maxOutputBytes: t.maxOutputBytes,
      },
    });
  }

  /** Refuses package specs pip must never see (URLs, paths, options), naming the offending one. */
  checkPackages(packages: readonly string[]): void {
    try {
      normalizePackageSpecs(packages);
    } catch (err) {
      if (err instanceof PackageSpecError)
        throw new ValidationError(err.message, [{ field: 'packages', problem: err.message }]);
      throw err;
    }
  }

  /** `rows`: structured records checked and keyed by the harness, passed on as text only. */
  async start(
    tap: TapConfig,
    script: string,
    env: Record<string, string>,
    secrets: string[],
    rows = false,
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
      });
    }
    // The file name shows in tracebacks, so it is the tap's (as a valid module name).
    const file = await writeScript(script, {
      fileName: `${tap.name.replace(/[^A-Za-z0-9_]/g, '_').replace(/^(\d)/, '_$1')}.py`,
    });
    const handle = this.sandbox.run({
      scriptPath: file.path,
      python: venv.python,
      venvDir: venv.dir,
      env,
      secrets,
      rows,
    });
    const done = handle.outcome.then(async (o) => {
      await file.remove().catch(() => undefined);
      return { logs: o.logs, error: o.error?.message ?? null, durationMs: Date.now() - started };
    });
    return {
      chunks: handle.chunks({ parse: !rows }),
      done,
      kill: () => handle.kill(),
    };
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
