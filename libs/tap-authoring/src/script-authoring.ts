import { ChatTurn, FeatureModel, head } from '@tapyard/ai';
import { UnprocessableError, errorMessage } from '@tapyard/core';
import { normalizePackageSpecs } from '@tapyard/sandbox';
import { PromptFragment } from './prompt-fragments/prompt-fragment';
import { fragmentsSection, scriptRules, secretSection } from './prompts';
import { generatedScriptProblems, preservationProblems } from './script-checks';
import { ScriptFacts, scriptFacts } from './script-facts';
import type { TapContext } from './tap-context';

export interface Answer {
  script: string;
  packages: string[];
  changes?: string[];
}

/**
 * Writes tap scripts with the model and holds them to the platform's checks: every script is checked from
 * its syntax tree (with `python`, the taps' interpreter) before anyone stores it.
 */
export class ScriptAuthor {
  constructor(private readonly python: string) {}

  system(ctx: TapContext, fragments: readonly PromptFragment[], answer: string): string {
    return (
      `${scriptRules(ctx.tapType)}\n${secretSection(ctx.secretName, Object.keys(ctx.secretFields))}` +
      `${fragmentsSection(fragments)}\n\n${answer}`
    );
  }

  /**
   * Asks for a script, checks it, and sends it back once with the reasons; a second failure is a 422
   * listing them. `before` (review, optimise) adds the preservation checks against the original.
   */
  async write(
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

  facts(script: string): Promise<ScriptFacts> {
    return scriptFacts(this.python, script);
  }
}

/** Models often wrap code in a fence even inside JSON. */
export function stripFence(text: string): string {
  const m = /^\s*```[a-zA-Z0-9]*[ \t]*\r?\n([\s\S]*?)\r?\n?```\s*$/.exec(text);
  return m ? m[1] : text;
}
