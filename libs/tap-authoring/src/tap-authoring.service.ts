import { Inject, Injectable } from '@nestjs/common';
import { Logger } from 'pino';
import { AiService, ChatTurn, FeatureModel, head, tail } from '@tapyard/ai';
import {
  CONFIG,
  LOGGER,
  NotFoundError,
  TapyardConfig,
  UnprocessableError,
  ValidationError,
  errorMessage,
} from '@tapyard/core';
import { normalizePackageSpecs } from '@tapyard/sandbox';
import { cronFromEnglish, describeQuartz, parseQuartz, validateQuartz } from '@tapyard/schedules';
import { SecretsService } from '@tapyard/secrets';
import type { AccessCheck } from '@tapyard/auth';
import {
  TapCaller,
  TapConfig,
  TapPolicy,
  TapRunner,
  TapsRepository,
  TapsService,
  TapType,
  TestResult,
  assertTapSecret,
  isScriptOf,
} from '@tapyard/taps';
import { logSignals } from './log-signals';
import { PromptFragment } from './prompt-fragments/prompt-fragment';
import { PromptFragmentsService } from './prompt-fragments/prompt-fragments.service';
import {
  BRAINSTORM_SCHEMA,
  CHANGES_ANSWER,
  CHANGES_SCHEMA,
  CRON_SCHEMA,
  EXPLANATION_SCHEMA,
  PLATFORM_VARS,
  SCRIPT_ANSWER,
  SCRIPT_SCHEMA,
  brainstormSystem,
  fragmentsSection,
  scriptRules,
  secretSection,
} from './prompts';
import { generatedScriptProblems, preservationProblems } from './script-checks';
import { ScriptFacts, scriptFacts } from './script-facts';

export interface BrainstormInput {
  messages: { role: 'user' | 'assistant'; content: string }[];
  currentDescription?: string;
  tapType: TapType;
}
export interface BrainstormResult {
  reply: string;
  description: string;
  suggestedEnvVars: string[];
}
export interface GenerateInput {
  description: string;
  tapName: string;
  oldScriptPath?: string;
  secretName?: string;
  tapType?: TapType;
}
export interface FixInput {
  tapName: string;
  script: string;
  diagnosis?: string;
  logs?: string;
  error?: string;
  oldScriptPath?: string;
}
export interface ReviewInput {
  tapName: string;
  script: string;
  recordCount: number;
  durationMs: number;
  logs?: string;
  oldScriptPath?: string;
}
export interface ScriptResult {
  script: string;
  packages: string[];
  scriptPath: string;
  injectedPrompts: string[];
}
export interface ChangesResult {
  script: string;
  packages: string[];
  scriptPath: string;
  changes: string[];
}
export interface ReviewResult extends ChangesResult {
  rewritten: boolean;
}
export interface Verification {
  originalMs: number;
  optimizedMs: number;
  kept: 'original' | 'optimized';
  reason: string;
}
export interface OptimizeResult extends ChangesResult {
  verification?: Verification;
}
export interface CronResult {
  cronExpression: string;
  explanation: string;
  nextRuns: string[];
}

/** Where the tap's authoring context comes from: the stored tap, overridden by the request. */
interface TapContext {
  tapName: string;
  tapType: TapType;
  stored: TapConfig | null;
  secretName: string | null;
  secretFields: Record<string, string>;
  packages: string[];
}

interface Answer {
  script: string;
  packages: string[];
  changes?: string[];
}

/** The optimiser is kept unless it runs this much slower (spec Limits, "Optimise regression guard"). */
const REGRESSION_LIMIT = 1.2;

/**
 * AI-assisted tap authoring: brainstorm, generate, fix, review, optimise, explain and the cron
 * fallback. The model proposes; the platform decides: every script is checked from its syntax tree
 * before it is stored, and a review or optimisation must keep what the original promised.
 */
@Injectable()
export class TapAuthoringService {
  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly ai: AiService,
    private readonly fragments: PromptFragmentsService,
    private readonly taps: TapsService,
    private readonly repo: TapsRepository,
    private readonly runner: TapRunner,
    private readonly secrets: SecretsService,
    private readonly policy: TapPolicy,
  ) {}

  async brainstorm(env: string, input: BrainstormInput, signal?: AbortSignal): Promise<BrainstormResult> {
    const model = await this.ai.model(env, 'tapAuthoring');
    const userTexts = input.messages.filter((m) => m.role === 'user').map((m) => m.content);
    const fragments = await this.fragments.matching(env, [...userTexts, input.currentDescription ?? '']);
    const budget = model.inputChars(6000);
    const messages: ChatTurn[] = trimConversation(input.messages, budget);
    if (input.currentDescription?.trim()) {
      messages.unshift({
        role: 'user',
        content: `The tap description so far:\n${head(input.currentDescription, 8000)}`,
      });
      if (messages[1]?.role === 'user') messages.splice(1, 0, { role: 'assistant', content: 'Noted.' });
    }
    const answer = await model.json<BrainstormResult>({
      name: 'tap_brainstorm',
      schema: BRAINSTORM_SCHEMA,
      system: brainstormSystem(input.tapType) + fragmentsSection(fragments),
      messages,
      signal,
      check: input.tapType === 'document' ? documentBrainstormProblems : undefined,
    });
    return {
      reply: answer.reply,
      description: answer.description,
      // Rule 3 is the platform's, not the model's: the injected variables are removed here.
      suggestedEnvVars: [
        ...new Set(
          answer.suggestedEnvVars
            .map((v) => v.trim())
            .filter((v) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(v) && !PLATFORM_VARS.has(v.toUpperCase())),
        ),
      ],
    };
  }

  /** Writes a tap script, as `access` may (TapPolicy: code for a secret needs secret:use). */
  async generate(
    env: string,
    input: GenerateInput,
    access: AccessCheck,
    signal?: AbortSignal,
  ): Promise<ScriptResult> {
    this.policy.assertMayWriteFor(access, input.secretName);
    const ctx = await this.context(env, input.tapName, input.secretName, input.tapType);
    this.assertOldPath(input.tapName, input.oldScriptPath);
    const model = await this.ai.model(env, 'tapAuthoring');
    const fragments = await this.fragments.matching(env, [input.description, ctx.stored?.description ?? '']);
    const answer = await this.authorScript(model, ctx, {
      system: this.scriptSystem(ctx, fragments, SCRIPT_ANSWER),
      user: `Write the tap "${ctx.tapName}" (${ctx.tapType}).\n\nWhat it should do:\n${head(input.description, model.inputChars(8000))}`,
      schema: SCRIPT_SCHEMA,
      signal,
    });
    const scriptPath = await this.taps.storeScriptVersion(env, ctx.tapName, answer.script, {
      origin: 'generate',
      access,
    });
    return {
      script: answer.script,
      packages: answer.packages,
      scriptPath,
      injectedPrompts: fragments.map((f) => f.key),
    };
  }

  async fix(env: string, input: FixInput, access: AccessCheck, signal?: AbortSignal): Promise<ScriptResult> {
    const ctx = await this.context(env, input.tapName);
    this.assertOldPath(input.tapName, input.oldScriptPath);
    const model = await this.ai.model(env, 'tapAuthoring');
    const fragments = await this.fragments.matching(env, [
      input.diagnosis ?? '',
      input.error ?? '',
      ctx.stored?.description ?? '',
    ]);
    const room = model.inputChars(8000);
    const answer = await this.authorScript(model, ctx, {
      system: this.scriptSystem(ctx, fragments, SCRIPT_ANSWER),
      user:
        `Fix the tap "${ctx.tapName}". Keep what works; change what the failure shows is wrong.\n\n` +
        `The script:\n\`\`\`python\n${head(input.script, Math.floor(room / 2))}\n\`\`\`\n\n` +
        `Error:\n${head(input.error ?? '(none)', 4000)}\n\nDiagnosis:\n${head(input.diagnosis ?? '(none)', 4000)}\n\n` +
        `Logs (the end):\n${tail(input.logs ?? '', Math.floor(room / 3))}`,
      schema: SCRIPT_SCHEMA,
      signal,
    });
    const scriptPath = await this.taps.storeScriptVersion(env, ctx.tapName, answer.script, {
      origin: 'fix',
      access,
    });
    return {
      script: answer.script,
      packages: answer.packages,
      scriptPath,
      injectedPrompts: fragments.map((f) => f.key),
    };
  }

  /** Spec rule 5 and the state table: a rewrite only when the logs show a signal. */
  async review(
    env: string,
    input: ReviewInput,
    access: AccessCheck,
    signal?: AbortSignal,
  ): Promise<ReviewResult> {
    const ctx = await this.context(env, input.tapName);
    this.assertOldPath(input.tapName, input.oldScriptPath);
    const signals = logSignals(input.logs ?? '', input.recordCount);
    if (signals.kinds.length === 0) return { ...unchanged(ctx, input), rewritten: false };
    const answer = await this.rewrite(
      env,
      ctx,
      input,
      `Review the tap "${ctx.tapName}" after a test run: ${input.recordCount} records in ${input.durationMs} ms. ` +
        `Its logs show ${signals.kinds.join(', ')}. Rewrite the script so the causes go away; keep fetch()'s ` +
        'signature, the test-limit handling, every environment read, retries and status checks.',
      `Log lines that show it:\n${signals.lines.join('\n') || '(no lines; the run returned no records)'}`,
      signal,
    );
    if (!answer) return { ...unchanged(ctx, input), rewritten: false };
    const scriptPath = await this.taps.storeScriptVersion(env, ctx.tapName, answer.script, {
      origin: 'review',
      access,
    });
    return { ...answer, scriptPath, rewritten: true };
  }

  /**
   * Spec rule 5: empty `changes` returns the input script and path. With `verify`, both versions are
   * tested and the rewrite is kept only when it is not 20 % slower (and still works); the caller runs
   * the tests with their own rights, as `access` may (TapPolicy).
   */
  async optimize(
    env: string,
    input: ReviewInput & { verify?: boolean; testLimit?: number },
    access: AccessCheck,
    signal?: AbortSignal,
  ): Promise<OptimizeResult> {
    if (input.verify) this.policy.assertMayVerify(access, await this.repo.find(env, input.tapName));
    const ctx = await this.context(env, input.tapName);
    this.assertOldPath(input.tapName, input.oldScriptPath);
    const answer = await this.rewrite(
      env,
      ctx,
      input,
      `Make the tap "${ctx.tapName}" faster (it took ${input.durationMs} ms for ${input.recordCount} records): ` +
        "fewer round trips, larger pages, streaming instead of buffering, sessions reused. Keep fetch()'s " +
        'signature, the test-limit handling, every environment read, retry/back-off and status-raising calls. ' +
        'If it is already efficient, change nothing.',
      '',
      signal,
    );
    if (!answer) return unchanged(ctx, input);
    let verification: Verification | undefined;
    if (input.verify) {
      verification = await this.verify(env, ctx, input.script, answer, input.testLimit ?? 0, access.caller);
      if (verification.kept === 'original') return { ...unchanged(ctx, input), verification };
    }
    const scriptPath = await this.taps.storeScriptVersion(env, ctx.tapName, answer.script, {
      origin: 'optimize',
      access,
    });
    return { ...answer, scriptPath, ...(verification ? { verification } : {}) };
  }

  /**
   * `aiExplanation` of a test or run result that failed or found nothing; null when no provider is
   * configured, nothing went wrong, or the model could not be asked (a diagnosis never fails a run).
   */
  async explain(
    env: string,
    tap: Pick<TapConfig, 'name' | 'tapType'>,
    script: string | null,
    result: Pick<TestResult, 'error' | 'logs' | 'recordCount'>,
    signal?: AbortSignal,
  ): Promise<string | null> {
    if (!result.error && result.recordCount > 0) return null;
    try {
      const model = await this.ai.optionalModel(env, 'tapAuthoring');
      if (!model) return null;
      const room = model.inputChars(4000);
      const answer = await model.json<{ explanation: string }>({
        name: 'tap_diagnosis',
        schema: EXPLANATION_SCHEMA,
        system:
          'You diagnose failed Tapyard tap runs (Python scripts defining fetch()). In two to four sentences say what ' +
          'went wrong and what to change. Be concrete; quote the decisive log line. Answer with one JSON object: ' +
          '{"explanation": string}.',
        messages: [
          {
            role: 'user',
            content:
              `Tap "${tap.name}" (${tap.tapType}) ${result.error ? 'failed' : 'returned 0 records'}.\n\n` +
              `Error:\n${head(result.error ?? '(none)', 4000)}\n\nLogs (the end):\n${tail(result.logs, Math.floor(room / 2))}\n\n` +
              `Script:\n\`\`\`python\n${head(script ?? '(not available)', Math.floor(room / 3))}\n\`\`\``,
          },
        ],
        signal,
      });
      return answer.explanation.trim() || null;
    } catch (err) {
      this.logger.warn(
        { tap: tap.name, reason: errorMessage(err) },
        'no aiExplanation: the model could not be asked',
      );
      return null;
    }
  }

  /** The deterministic parser first; phrasing it does not know goes to the model, whose answer must be valid Quartz. */
  async cron(env: string, description: string, timezone: string, signal?: AbortSignal): Promise<CronResult> {
    const known = cronFromEnglish(description, timezone);
    if (known) return known;
    const model = await this.ai.optionalModel(env, 'cron');
    const hint =
      'try e.g. "every 15 minutes", "every weekday at 7am", "monthly on day 1 at 06:00" or "last day of the month at 23:00"';
    if (!model) {
      throw new UnprocessableError(
        `'${description.slice(0, 100)}' is not a schedule Tapyard understands without a model provider; ${hint}`,
      );
    }
    const messages: ChatTurn[] = [
      { role: 'user', content: `Schedule: ${head(description, 2000)}\nTime zone: ${timezone}` },
    ];
    let last = '';
    for (let attempt = 0; attempt < 2; attempt++) {
      const answer = await model.json<{ cronExpression: string; explanation: string }>({
        name: 'quartz_schedule',
        schema: CRON_SCHEMA,
        system:
          'Convert the schedule to a Quartz cron expression: seven or six fields, seconds first (seconds minutes ' +
          'hours day-of-month month day-of-week [year]), `?` in exactly one of day-of-month and day-of-week. ' +
          'Answer with one JSON object: {"cronExpression": string, "explanation": string}.',
        messages,
        signal,
      });
      const expression = answer.cronExpression.trim();
      const problem = validateQuartz(expression);
      if (problem === null) {
        const runs = parseQuartz(expression, timezone).nextRuns(5, new Date());
        if (runs.length > 0) {
          return {
            cronExpression: expression,
            explanation: describeQuartz(expression),
            nextRuns: runs.map((d) => d.toISOString()),
          };
        }
      }
      last = `'${expression.slice(0, 100)}' ${problem ?? 'never fires'}`;
      messages.push(
        { role: 'assistant', content: JSON.stringify(answer) },
        { role: 'user', content: `That is not a usable Quartz expression: ${last}. Answer again.` },
      );
    }
    throw new UnprocessableError(
      `the model's schedule for '${description.slice(0, 100)}' is not valid Quartz: ${last}`,
    );
  }

  /** Addendum: suggest content for a fragment; existing content is refined, not replaced. */
  async suggestFragment(
    env: string,
    input: { key: string; aliases: string[]; content?: string },
    signal?: AbortSignal,
  ): Promise<string> {
    const model = await this.ai.model(env, 'tapAuthoring');
    const existing = input.content?.trim();
    const res = await model.complete({
      system:
        'You write prompt fragments: short instructions an organisation adds to the prompts that write its data-fetching ' +
        'Python scripts (taps) whenever a user mentions a term. Write plain text, at most 15 lines: conventions, ' +
        'endpoints, authentication, pagination, quirks, fields to prefer. ' +
        (existing
          ? 'Refine the existing fragment: keep every fact and instruction it has, fix wording, fill obvious gaps. ' +
            'Do not replace it with something else.'
          : 'Write a first version from what the term suggests.') +
        ' Answer with the fragment text only.',
      messages: [
        {
          role: 'user',
          content:
            `Term: ${input.key}\nAliases: ${input.aliases.join(', ') || '(none)'}\n` +
            (existing ? `Existing fragment:\n${head(existing, 16_000)}` : 'There is no content yet.'),
        },
      ],
      signal,
    });
    const text = stripFence(res.text).trim();
    return text || existing || '';
  }

  // ---------------------------------------------------------------------------------------------

  private scriptSystem(ctx: TapContext, fragments: readonly PromptFragment[], answer: string): string {
    return (
      `${scriptRules(ctx.tapType)}\n${secretSection(ctx.secretName, Object.keys(ctx.secretFields))}` +
      `${fragmentsSection(fragments)}\n\n${answer}`
    );
  }

  /**
   * Review and optimise: the model rewrites `input.script` as asked, checked against the original's
   * syntax tree. Null when it changed nothing (same text or no `changes`).
   */
  private async rewrite(
    env: string,
    ctx: TapContext,
    input: ReviewInput,
    ask: string,
    evidence: string,
    signal?: AbortSignal,
  ): Promise<(Answer & { changes: string[] }) | null> {
    const before = await this.facts(input.script);
    if (before.syntaxError) {
      throw new ValidationError(`the script does not parse as Python 3 (${before.syntaxError})`, [
        { field: 'script', problem: before.syntaxError },
      ]);
    }
    const model = await this.ai.model(env, 'tapAuthoring');
    const fragments = await this.fragments.matching(env, [ctx.stored?.description ?? '', input.script]);
    const room = model.inputChars(8000);
    const answer = await this.authorScript(
      model,
      ctx,
      {
        system: this.scriptSystem(ctx, fragments, CHANGES_ANSWER),
        user:
          `${ask}\n\nThe script:\n\`\`\`python\n${head(input.script, Math.floor(room / 2))}\n\`\`\`\n\n` +
          `${evidence ? `${evidence}\n\n` : ''}Logs (the end):\n${tail(input.logs ?? '', Math.floor(room / 4))}`,
        schema: CHANGES_SCHEMA,
        signal,
      },
      before,
    );
    const changes = answer.changes ?? [];
    if (answer.script.trim() === input.script.trim() || changes.length === 0) return null;
    return { ...answer, changes };
  }

  /**
   * Asks for a script, checks it, and sends it back once with the reasons; a second failure is a 422
   * listing them. `before` (review, optimise) adds the preservation checks against the original.
   */
  private async authorScript(
    model: FeatureModel,
    ctx: TapContext,
    ask: { system: string; user: string; schema: Record<string, unknown>; signal?: AbortSignal },
    before?: ScriptFacts,
  ): Promise<Answer> {
    const messages: ChatTurn[] = [{ role: 'user', content: ask.user }];
    let problems: string[] = [];
    for (let attempt = 0; attempt < 2; attempt++) {
      const answer = await model.json<Answer>({
        name: 'tap_script',
        schema: ask.schema,
        system: ask.system,
        messages,
        signal: ask.signal,
      });
      const script = stripFence(answer.script);
      const packages = answer.packages.map((p) => p.trim()).filter((p) => p.length > 0);
      problems = await this.problems(script, packages, ctx, before);
      if (problems.length === 0) return { script, packages, changes: answer.changes };
      messages.push(
        { role: 'assistant', content: JSON.stringify({ ...answer, script: head(script, 40_000) }) },
        {
          role: 'user',
          content: `The script cannot be used: ${problems.join('; ')}. Correct it and answer again in the same JSON shape.`,
        },
      );
    }
    throw new UnprocessableError(
      `the generated script failed the platform's checks twice: ${problems.join('; ')}`,
      problems.map((problem) => ({ field: 'script', problem })),
    );
  }

  private async problems(
    script: string,
    packages: string[],
    ctx: TapContext,
    before?: ScriptFacts,
  ): Promise<string[]> {
    const facts = await this.facts(script);
    const problems = generatedScriptProblems(script, facts, {
      packages,
      secretFields: ctx.secretFields,
      tapType: ctx.tapType,
    });
    try {
      normalizePackageSpecs(packages);
    } catch (err) {
      problems.push(`its packages are not valid: ${errorMessage(err)}`);
    }
    if (before && !facts.syntaxError) problems.push(...preservationProblems(before, facts));
    return problems;
  }

  private facts(script: string): Promise<ScriptFacts> {
    return scriptFacts(this.config.taps.python, script);
  }

  private async verify(
    env: string,
    ctx: TapContext,
    original: string,
    optimized: Answer,
    testLimit: number,
    caller: TapCaller | null,
  ): Promise<Verification> {
    const base = this.taps.merge(ctx.stored, { name: ctx.tapName, tapType: ctx.tapType });
    const a = await this.runner.test(env, base, original, testLimit, caller);
    const b = await this.runner.test(
      env,
      { ...base, packages: optimized.packages },
      optimized.script,
      testLimit,
      caller,
    );
    const verdict = (kept: Verification['kept'], reason: string): Verification => ({
      originalMs: a.durationMs,
      optimizedMs: b.durationMs,
      kept,
      reason,
    });
    if (b.error) return verdict('original', `the optimised script failed: ${head(b.error, 300)}`);
    if (b.recordCount < a.recordCount) {
      return verdict(
        'original',
        `the optimised script returned ${b.recordCount} records, the original ${a.recordCount}`,
      );
    }
    if (!a.error && b.durationMs >= a.durationMs * REGRESSION_LIMIT) {
      return verdict(
        'original',
        `the optimised script ran ${Math.round((b.durationMs / Math.max(1, a.durationMs) - 1) * 100)} % slower`,
      );
    }
    return verdict(
      'optimized',
      a.error ? 'the original failed; the optimised script works' : 'not slower than the 20 % guard',
    );
  }

  private async context(
    env: string,
    tapName: string,
    secretName?: string,
    tapType?: TapType,
  ): Promise<TapContext> {
    const stored = await this.repo.find(env, tapName);
    if (stored && tapType && stored.tapType !== tapType) {
      throw new ValidationError(`tap '${tapName}' is a ${stored.tapType} tap, not ${tapType}`, [
        { field: 'tapType', problem: `is ${stored.tapType} and cannot change` },
      ]);
    }
    const secret = secretName?.trim() || stored?.secretName || null;
    let secretFields: Record<string, string> = {};
    if (secret) {
      assertTapSecret(secret);
      try {
        secretFields = await this.secrets.reveal(env, secret);
      } catch (err) {
        if (err instanceof NotFoundError) {
          throw new ValidationError(`secret '${secret}' does not exist`, [
            { field: 'secretName', problem: 'does not exist' },
          ]);
        }
        throw err;
      }
    }
    return {
      tapName,
      tapType: tapType ?? stored?.tapType ?? 'structured',
      stored,
      secretName: secret,
      secretFields,
      packages: stored?.packages ?? [],
    };
  }

  private assertOldPath(tapName: string, oldScriptPath?: string): void {
    const p = oldScriptPath?.trim();
    if (p && !isScriptOf(tapName, p)) {
      throw new ValidationError(`oldScriptPath must be one of the scripts of tap '${tapName}'`, [
        { field: 'oldScriptPath', problem: 'is not a script of this tap' },
      ]);
    }
  }
}

/** Review/optimise without a rewrite: the input script and path (spec rule 5). */
function unchanged(ctx: TapContext, input: ReviewInput): ChangesResult {
  return {
    script: input.script,
    packages: ctx.packages,
    scriptPath: input.oldScriptPath ?? ctx.stored?.scriptPath ?? '',
    changes: [],
  };
}

/** A document tap's brainstorm never asks about what the platform decides (spec rule 2). */
function documentBrainstormProblems(answer: Record<string, unknown>): string[] {
  const text = `${String(answer.reply)}\n${String(answer.description)}`;
  return /\bchunk|\bembed|vector[ -]?(store|database|db|index)|\bqdrant\b|\bpgvector\b|\bweaviate\b|\bmilvus\b|\bchroma\b/i.test(
    text,
  )
    ? [
        'the reply or description mentions chunking, embedding or vector stores, which the platform decides; ' +
          'ask only about the document source',
      ]
    : [];
}

/** Models often wrap code in a fence even inside JSON. */
function stripFence(text: string): string {
  const m = /^\s*```[a-zA-Z0-9]*[ \t]*\r?\n([\s\S]*?)\r?\n?```\s*$/.exec(text);
  return m ? m[1] : text;
}

/** The latest turns that fit the budget, starting with a user turn. */
function trimConversation(messages: BrainstormInput['messages'], maxChars: number): ChatTurn[] {
  const out: ChatTurn[] = [];
  let size = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    const content = head(m.content, 20_000);
    if (size + content.length > maxChars && out.length > 0) break;
    size += content.length;
    out.unshift({ role: m.role, content });
  }
  while (out.length > 0 && out[0].role !== 'user') out.shift();
  return out;
}
