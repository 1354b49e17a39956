import { Inject, Injectable } from '@nestjs/common';
import { Logger } from 'pino';
import { AiService, ChatTurn, head, tail } from '@tapyard/ai';
import { CONFIG, LOGGER, TapyardConfig, ValidationError, errorMessage } from '@tapyard/core';
import { SecretsService } from '@tapyard/secrets';
import type { AccessCheck } from '@tapyard/auth';
import { TapConfig, TapPolicy, TapRunner, TapsRepository, TapsService, TestResult } from '@tapyard/taps';
import { documentBrainstormProblems, trimConversation } from './conversation';
import { CronAuthor } from './cron-authoring';
import { logSignals } from './log-signals';
import { OptimizeVerifier } from './optimize-verification';
import { PromptFragmentsService } from './prompt-fragments/prompt-fragments.service';
import {
  BRAINSTORM_SCHEMA,
  CHANGES_ANSWER,
  CHANGES_SCHEMA,
  EXPLANATION_SCHEMA,
  PLATFORM_VARS,
  SCRIPT_ANSWER,
  SCRIPT_SCHEMA,
  brainstormSystem,
  fragmentsSection,
} from './prompts';
import { Answer, ScriptAuthor, stripFence } from './script-authoring';
import { TapContext, TapContexts, assertOldPath, unchanged } from './tap-context';
import type {
  BrainstormInput,
  BrainstormResult,
  CronResult,
  FixInput,
  GenerateInput,
  OptimizeResult,
  ReviewInput,
  ReviewResult,
  ScriptResult,
  Verification,
} from './tap-authoring.types';

/**
 * AI-assisted tap authoring: brainstorm, generate, fix, review, optimise, explain and the cron
 * fallback. The model proposes; the platform decides: every script is checked from its syntax tree
 * before it is stored, and a review or optimisation must keep what the original promised.
 */
@Injectable()
export class TapAuthoringService {
  private readonly author: ScriptAuthor;
  private readonly contexts: TapContexts;
  private readonly verifier: OptimizeVerifier;
  private readonly cronAuthor: CronAuthor;

  constructor(
    @Inject(CONFIG) config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly ai: AiService,
    private readonly fragments: PromptFragmentsService,
    private readonly taps: TapsService,
    private readonly repo: TapsRepository,
    runner: TapRunner,
    secrets: SecretsService,
    private readonly policy: TapPolicy,
  ) {
    this.author = new ScriptAuthor(config.taps.python);
    this.contexts = new TapContexts(repo, secrets);
    this.verifier = new OptimizeVerifier(taps, runner);
    this.cronAuthor = new CronAuthor(ai);
  }

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
    const ctx = await this.contexts.load(env, input.tapName, input.secretName, input.tapType);
    assertOldPath(input.tapName, input.oldScriptPath);
    const model = await this.ai.model(env, 'tapAuthoring');
    const fragments = await this.fragments.matching(env, [input.description, ctx.stored?.description ?? '']);
    const answer = await this.author.write(model, ctx, {
      system: this.author.system(ctx, fragments, SCRIPT_ANSWER),
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
    const ctx = await this.contexts.load(env, input.tapName);
    assertOldPath(input.tapName, input.oldScriptPath);
    const model = await this.ai.model(env, 'tapAuthoring');
    const fragments = await this.fragments.matching(env, [
      input.diagnosis ?? '',
      input.error ?? '',
      ctx.stored?.description ?? '',
    ]);
    const room = model.inputChars(8000);
    const answer = await this.author.write(model, ctx, {
      system: this.author.system(ctx, fragments, SCRIPT_ANSWER),
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
    const ctx = await this.contexts.load(env, input.tapName);
    assertOldPath(input.tapName, input.oldScriptPath);
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
    const ctx = await this.contexts.load(env, input.tapName);
    assertOldPath(input.tapName, input.oldScriptPath);
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
      verification = await this.verifier.verify(
        env,
        ctx,
        input.script,
        answer,
        input.testLimit ?? 0,
        access.caller,
      );
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
  cron(env: string, description: string, timezone: string, signal?: AbortSignal): Promise<CronResult> {
    return this.cronAuthor.cron(env, description, timezone, signal);
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
    const before = await this.author.facts(input.script);
    if (before.syntaxError) {
      throw new ValidationError(`the script does not parse as Python 3 (${before.syntaxError})`, [
        { field: 'script', problem: before.syntaxError },
      ]);
    }
    const model = await this.ai.model(env, 'tapAuthoring');
    const fragments = await this.fragments.matching(env, [ctx.stored?.description ?? '', input.script]);
    const room = model.inputChars(8000);
    const answer = await this.author.write(
      model,
      ctx,
      {
        system: this.author.system(ctx, fragments, CHANGES_ANSWER),
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
}
