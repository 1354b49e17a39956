import { AiService, ChatTurn, head } from '@tapyard/ai';
import { UnprocessableError } from '@tapyard/core';
import { cronFromEnglish, describeQuartz, parseQuartz, validateQuartz } from '@tapyard/schedules';
import { CRON_SCHEMA } from './prompts';
import type { CronResult } from './tap-authoring.types';

/** A schedule in words to a Quartz expression. */
export class CronAuthor {
  constructor(private readonly ai: AiService) {}

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
}
