import { Inject, Injectable } from '@nestjs/common';
import { mkdir } from 'node:fs/promises';
import { FeatureModel, head } from '@tapyard/ai';
import { CONFIG, TapyardConfig } from '@tapyard/core';
import { FieldType, SchemaField, Value, coercer, Invalid } from '@tapyard/model';
import type { TypedBatch } from '@tapyard/model';
import { Venv, VenvCache, resolveInterpreter } from '@tapyard/sandbox';
import { CodegenRepository } from './codegen.repository';
import { checkScript } from './script-checks';
import {
  CONTRACT_VERSION,
  CodegenKind,
  contractText,
  RunningScript,
  ScriptRunSpec,
  failureWithoutValues,
} from '@tapyard/scripts';

/** A script that passed the checks and the dry run, ready to be stored. */
export interface Candidate {
  script: string;
  model: string;
  outputColumns: SchemaField[];
}

/** Why a candidate was not accepted: it stays pending with this reason. */
export class CandidateRefused extends Error {
  override readonly name = 'CandidateRefused';
}

const MiB = 1024 * 1024;

const SCRIPT_SCHEMA = {
  type: 'object',
  required: ['script'],
  properties: { script: { type: 'string', minLength: 1 } },
};

const SAMPLES: Record<FieldType, Value> = {
  boolean: true,
  int: 1,
  bigint: 1,
  float: 1.5,
  double: 1.5,
  string: 'example',
  date: '2024-01-31',
  timestamp: '2024-01-31T09:30:00Z',
  decimal: '12.50',
};

/**
 * Writes CodeGen scripts with the model and decides whether one may go live: the static checks of the
 * script contract (a failing answer goes back to the model once with the reasons), then a dry run in the
 * sandbox on a sample of the rows the pipeline last landed (or, before its first load, one typical row and
 * one of NULLs per column).
 */
@Injectable()
export class ScriptAuthor {
  private venv: Promise<Venv> | null = null;

  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    private readonly repo: CodegenRepository,
  ) {}

  async write(
    model: FeatureModel,
    kind: CodegenKind,
    instruction: string,
    columns: SchemaField[],
    current: string | null,
    signal?: AbortSignal,
  ): Promise<Candidate> {
    const system =
      `You write ${kind === 'dataQuality' ? 'data-quality' : 'transformation'} scripts in Python 3 for a data ` +
      `platform. Answer with one JSON object {"script": "<the whole Python file>"}.\n\n${contractText(kind, columns)}`;
    const user =
      `The instruction:\n${head(instruction, 8000)}` +
      (current
        ? `\n\nThe current script (keep what still applies):\n\`\`\`python\n${head(current, 20_000)}\n\`\`\``
        : '');
    const messages: { role: 'user' | 'assistant'; content: string }[] = [{ role: 'user', content: user }];
    let problems: string[] = [];
    for (let attempt = 0; attempt < 2; attempt++) {
      const answer = await model.json<{ script: string }>({
        name: 'codegen_script',
        schema: SCRIPT_SCHEMA,
        system,
        messages,
        signal,
      });
      const checked = await checkScript(this.config.taps.python, kind, answer.script, columns);
      problems = checked.problems;
      if (problems.length === 0)
        return { script: answer.script, model: model.model, outputColumns: checked.outputColumns };
      messages.push(
        { role: 'assistant', content: JSON.stringify(answer).slice(0, 40_000) },
        {
          role: 'user',
          content: `That script does not meet the contract: ${problems.join('; ')}. Answer again with the corrected script.`,
        },
      );
    }
    throw new CandidateRefused(`the generated script failed its checks: ${problems.join('; ')}`);
  }

  /** The static checks alone (restore, pull): the problems, and a transformation's declared columns. */
  check(kind: CodegenKind, script: string, columns: SchemaField[]): ReturnType<typeof checkScript> {
    return checkScript(this.config.taps.python, kind, script, columns);
  }

  /** Runs the script over the sample; throws CandidateRefused saying what went wrong. */
  async dryRun(
    environment: string,
    pipeline: string,
    kind: CodegenKind,
    script: string,
    columns: SchemaField[],
    outputColumns: SchemaField[],
  ): Promise<void> {
    const { batch } = await this.sample(environment, pipeline, columns);
    let running: RunningScript | null = null;
    try {
      running = await RunningScript.start(await this.runSpec(kind, script, outputColumns));
      await running.apply(batch);
      await running.close();
      running = null;
    } catch (err) {
      throw new CandidateRefused(
        // Shown to every reader of the pipeline: never a value of the sample rows.
        `the script failed its dry run on ${batch.lines.length} sample rows: ${failureWithoutValues(err)}`,
      );
    } finally {
      running?.kill();
    }
  }

  /** What a process needs to run the script (the stage thread starts it from this). */
  async runSpec(kind: CodegenKind, script: string, outputColumns: SchemaField[]): Promise<ScriptRunSpec> {
    const venv = await this.baseVenv();
    const c = this.config.codegen;
    return {
      kind,
      script,
      outputColumns,
      python: venv.python,
      venvDir: venv.dir,
      bwrap: this.config.taps.sandbox,
      uids: this.config.taps.sandboxUids,
      limits: {
        memoryBytes: c.memoryBytes,
        cpuSeconds: c.cpuSeconds,
        // A session lasts a whole job: time is bounded per batch (batchTimeoutMs) and by CPU seconds.
        timeoutMs: 24 * 3600_000,
        maxLogBytes: this.config.taps.maxLogBytes,
        // One answer is one batch (up to 5 000 rows or 16 MiB of input, more as JSON); the session's
        // total grows with the job, which the stage streams rather than holds.
        maxRecordBytes: 64 * MiB,
        maxOutputBytes: Number.MAX_SAFE_INTEGER,
      },
      batchTimeoutMs: c.batchTimeoutMs,
    };
  }

  get contractVersion(): number {
    return CONTRACT_VERSION;
  }

  /**
   * The last landed rows, mapped onto today's columns (`landed`), or a synthetic pair of rows before the
   * first load; with the output ratios (loaded / read) of the pipeline's recent jobs, newest first.
   */
  async sample(
    environment: string,
    pipeline: string,
    columns: SchemaField[],
  ): Promise<{ batch: TypedBatch; landed: boolean; recentRatios: number[] }> {
    const stored = await this.repo.sample(environment, pipeline);
    const landed = stored !== null && stored.rows.length > 0;
    const rows: Record<string, unknown>[] = landed
      ? stored.rows
      : [Object.fromEntries(columns.map((c) => [c.name, SAMPLES[c.type]])), {}];
    const coerce = columns.map((c) => coercer(c.type, false, c));
    const values: Value[][] = columns.map((c, i) =>
      rows.map((r) => {
        const v = r[c.name];
        if (v === null || v === undefined) return null;
        const typed = coerce[i](String(v));
        return typed instanceof Invalid ? null : typed;
      }),
    );
    return {
      batch: { columns, values, lines: rows.map((_, i) => i + 1) },
      landed,
      recentRatios: stored?.recentRatios ?? [],
    };
  }

  /** Scripts use the standard library only: one shared environment without packages. */
  private baseVenv(): Promise<Venv> {
    this.venv ??= (async () => {
      const root = this.config.taps.venvDir;
      await mkdir(root, { recursive: true, mode: 0o755 });
      const cache = new VenvCache({ root, python: await resolveInterpreter(this.config.taps.python) });
      return cache.ensure([]);
    })();
    this.venv.catch(() => (this.venv = null));
    return this.venv;
  }
}
