import { describeFields } from './quartz-describe';
import { assertFires, buildNext } from './quartz-next';
import { assertTimezone, InvalidCronError, parseQuartzFields } from './quartz-parse';

export { assertTimezone, InvalidCronError } from './quartz-parse';

/** A parsed Quartz expression bound to a timezone. */
export interface QuartzSchedule {
  readonly expression: string;
  readonly timezone: string;
  /** First fire time strictly after `after` (whole seconds), or null when the schedule has run out. */
  next(after: Date): Date | null;
  /** Up to `count` fire times after `after`; fewer when the schedule runs out. */
  nextRuns(count: number, after: Date): Date[];
}

/** null when `expression` is a valid Quartz expression that fires at least once, else the reason. */
export function validateQuartz(expression: string): string | null {
  try {
    assertFires(parseQuartzFields(expression), expression);
    return null;
  } catch (err) {
    if (err instanceof InvalidCronError) return err.message;
    throw err;
  }
}

/** Parses and binds a Quartz expression to an IANA timezone; throws InvalidCronError with the reason. */
export function parseQuartz(expression: string, timezone = 'UTC'): QuartzSchedule {
  const fields = parseQuartzFields(expression);
  assertFires(fields, expression);
  assertTimezone(timezone);
  const next = buildNext(fields, timezone);
  return {
    expression: expression.trim(),
    timezone,
    next,
    nextRuns(count: number, after: Date): Date[] {
      const runs: Date[] = [];
      for (let run = next(after); run && runs.length < count; run = next(run)) runs.push(run);
      return runs;
    },
  };
}

/** Deterministic plain-English reading of a Quartz expression; throws InvalidCronError when it is invalid. */
export function describeQuartz(expression: string): string {
  return describeFields(parseQuartzFields(expression));
}
