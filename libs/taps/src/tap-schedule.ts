import { ValidationError } from '@tapyard/core';
import { InvalidCronError, assertTimezone, isoInZone, parseQuartz } from '@tapyard/schedules';
import { TapConfig } from './tap.types';
import { TapErrorCode } from './tap-errors';

/** The next fire time after `after`, the expression read in `timezone`; throws InvalidCronError (400) naming what is wrong. */
export function nextFire(expression: string, timezone: string, after: Date): Date | null {
  return parseQuartz(expression, timezone).next(after);
}

/** Fire times a tap's schedule will have, in its zone with the offset; none without an enabled schedule. */
export function fireTimesOf(tap: TapConfig, after: Date, count = 5): string[] {
  if (!tap.enabled || tap.cronExpression === null) return [];
  try {
    return parseQuartz(tap.cronExpression, tap.timezone)
      .nextRuns(count, after)
      .map((d) => isoInZone(d, tap.timezone));
  } catch (err) {
    // A schedule saved before its rules tightened: it shows no fire times rather than failing the read.
    if (err instanceof InvalidCronError) return [];
    throw err;
  }
}

/** 400 naming the field when `timezone` is not an IANA zone name. */
export function assertTapTimezone(timezone: string): void {
  try {
    assertTimezone(timezone);
  } catch (err) {
    if (!(err instanceof InvalidCronError)) throw err;
    throw new ValidationError(err.message, [
      { field: 'timezone', problem: 'is not an IANA time zone' },
    ]).coded(TapErrorCode.InvalidTimezone);
  }
}
