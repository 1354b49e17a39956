import { describeFields } from './quartz-describe';
import { assertFires, buildNext, inZone, wallClock, zoneOffsetMs } from './quartz-next';
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
  const next = inZone(buildNext(fields), timezone);
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

/** `at` in ISO 8601 as the zone's wall clock with its offset, e.g. 2026-03-30T07:30:00+02:00. */
export function isoInZone(at: Date, timezone: string): string {
  const offset = zoneOffsetMs(wallClock(timezone), at);
  const local = new Date(Math.floor(at.getTime() / 1000) * 1000 + offset).toISOString().slice(0, 19);
  if (offset === 0) return `${local}Z`;
  const minutes = Math.abs(offset) / 60_000;
  const hh = String(Math.floor(minutes / 60)).padStart(2, '0');
  const mm = String(minutes % 60).padStart(2, '0');
  return `${local}${offset < 0 ? '-' : '+'}${hh}:${mm}`;
}
