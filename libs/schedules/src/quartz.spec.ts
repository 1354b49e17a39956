import { ValidationError } from '@tapyard/core';
import { describeQuartz, InvalidCronError, isoInZone, parseQuartz, validateQuartz } from './quartz';

// Wednesday 2024-01-10 12:34:56 UTC. 2024 is a leap year; January 1st 2024 is a Monday.
const START = '2024-01-10T12:34:56Z';

/**
 * Expected fire times were worked out by hand from the calendar (weekdays double-checked with
 * Date#getUTCDay), not copied from the implementation's output.
 */
const FIRE_TIMES: [expression: string, timezone: string, after: string, expected: string[]][] = [
  // Plain daily; '?' may sit in either day field.
  ['0 0 12 * * ?', 'UTC', START, ['2024-01-11T12:00:00Z', '2024-01-12T12:00:00Z']],
  ['0 0 12 ? * *', 'UTC', START, ['2024-01-11T12:00:00Z', '2024-01-12T12:00:00Z']],
  // Steps: '*/20' seconds, Quartz's '0/15' and '5/15' (start/step) minutes.
  ['*/20 * * ? * *', 'UTC', START, ['2024-01-10T12:35:00Z', '2024-01-10T12:35:20Z', '2024-01-10T12:35:40Z']],
  ['0 0/15 * * * ?', 'UTC', START, ['2024-01-10T12:45:00Z', '2024-01-10T13:00:00Z', '2024-01-10T13:15:00Z']],
  ['0 5/15 * * * ?', 'UTC', START, ['2024-01-10T12:35:00Z', '2024-01-10T12:50:00Z', '2024-01-10T13:05:00Z']],
  // Range with a step: minutes 10, 20, 30 of hours 13 and 14.
  [
    '0 10-30/10 13,14 * * ?',
    'UTC',
    START,
    ['2024-01-10T13:10:00Z', '2024-01-10T13:20:00Z', '2024-01-10T13:30:00Z', '2024-01-10T14:10:00Z'],
  ],
  // Weekday names and Quartz numbers (1 = SUN ... 7 = SAT); Jan 13 is a Saturday.
  [
    '0 0 7 ? * MON-FRI',
    'UTC',
    START,
    ['2024-01-11T07:00:00Z', '2024-01-12T07:00:00Z', '2024-01-15T07:00:00Z'],
  ],
  ['0 30 9 ? * 2-6', 'UTC', START, ['2024-01-11T09:30:00Z', '2024-01-12T09:30:00Z', '2024-01-15T09:30:00Z']],
  ['0 0 12 ? * 1,7', 'UTC', START, ['2024-01-13T12:00:00Z', '2024-01-14T12:00:00Z', '2024-01-20T12:00:00Z']],
  [
    '0 0 12 ? * sat,Sun',
    'UTC',
    START,
    ['2024-01-13T12:00:00Z', '2024-01-14T12:00:00Z', '2024-01-20T12:00:00Z'],
  ],
  // A lone 'L' in day-of-week is Saturday.
  ['0 0 12 ? * L', 'UTC', START, ['2024-01-13T12:00:00Z', '2024-01-20T12:00:00Z']],
  // Wrapped ranges: FRI-MON, 22-2 hours, NOV-FEB.
  [
    '0 0 12 ? * FRI-MON',
    'UTC',
    START,
    [
      '2024-01-12T12:00:00Z',
      '2024-01-13T12:00:00Z',
      '2024-01-14T12:00:00Z',
      '2024-01-15T12:00:00Z',
      '2024-01-19T12:00:00Z',
    ],
  ],
  [
    '0 0 22-2 * * ?',
    'UTC',
    START,
    [
      '2024-01-10T22:00:00Z',
      '2024-01-10T23:00:00Z',
      '2024-01-11T00:00:00Z',
      '2024-01-11T01:00:00Z',
      '2024-01-11T02:00:00Z',
      '2024-01-11T22:00:00Z',
    ],
  ],
  [
    '0 0 12 1 NOV-FEB ?',
    'UTC',
    START,
    ['2024-02-01T12:00:00Z', '2024-11-01T12:00:00Z', '2024-12-01T12:00:00Z', '2025-01-01T12:00:00Z'],
  ],
  // Month lists with a weekday: Fridays of January and March.
  [
    '0 0 12 ? JAN,MAR FRI',
    'UTC',
    START,
    ['2024-01-12T12:00:00Z', '2024-01-19T12:00:00Z', '2024-01-26T12:00:00Z', '2024-03-01T12:00:00Z'],
  ],
  // Day-of-month lists, ranges and steps (1/10 = 1, 11, 21, 31).
  ['0 0 12 1,15 * ?', 'UTC', START, ['2024-01-15T12:00:00Z', '2024-02-01T12:00:00Z', '2024-02-15T12:00:00Z']],
  [
    '0 0 12 10-12 * ?',
    'UTC',
    START,
    ['2024-01-11T12:00:00Z', '2024-01-12T12:00:00Z', '2024-02-10T12:00:00Z'],
  ],
  [
    '0 0 12 1/10 * ?',
    'UTC',
    START,
    ['2024-01-11T12:00:00Z', '2024-01-21T12:00:00Z', '2024-01-31T12:00:00Z', '2024-02-01T12:00:00Z'],
  ],
  // L: last day, with Feb 29 in the leap year.
  ['0 0 12 L * ?', 'UTC', START, ['2024-01-31T12:00:00Z', '2024-02-29T12:00:00Z', '2024-03-31T12:00:00Z']],
  // LW: Mar 31 2024 is a Sunday, so the last weekday is Friday the 29th.
  [
    '0 0 12 LW * ?',
    'UTC',
    START,
    ['2024-01-31T12:00:00Z', '2024-02-29T12:00:00Z', '2024-03-29T12:00:00Z', '2024-04-30T12:00:00Z'],
  ],
  // L-3: three days before the last day (31-3, 29-3, 31-3).
  ['0 0 12 L-3 * ?', 'UTC', START, ['2024-01-28T12:00:00Z', '2024-02-26T12:00:00Z', '2024-03-28T12:00:00Z']],
  // L-3W: Jan 28 is a Sunday -> Monday 29th; Apr 27 is a Saturday -> Friday 26th.
  [
    '0 0 12 L-3W 1,4 ?',
    'UTC',
    START,
    ['2024-01-29T12:00:00Z', '2024-04-26T12:00:00Z', '2025-01-28T12:00:00Z'],
  ],
  // 15W: Jun 15 2024 is a Saturday (-> Fri 14), Sep 15 2024 a Sunday (-> Mon 16), Jun 15 2025 a Sunday.
  [
    '0 0 12 15W 6,9 ?',
    'UTC',
    START,
    ['2024-06-14T12:00:00Z', '2024-09-16T12:00:00Z', '2025-06-16T12:00:00Z'],
  ],
  // 1W never leaves the month: Jun 1 2024 is a Saturday, so Monday the 3rd.
  [
    '0 0 12 1W * ?',
    'UTC',
    '2024-05-15T00:00:00Z',
    ['2024-06-03T12:00:00Z', '2024-07-01T12:00:00Z', '2024-08-01T12:00:00Z'],
  ],
  // 6L: last Friday of the month.
  ['0 0 12 ? * 6L', 'UTC', START, ['2024-01-26T12:00:00Z', '2024-02-23T12:00:00Z', '2024-03-29T12:00:00Z']],
  ['0 0 12 ? * FRIL', 'UTC', START, ['2024-01-26T12:00:00Z', '2024-02-23T12:00:00Z']],
  // 6#3: third Friday; MON#1: first Monday (January's, the 1st, has passed); 2#5: fifth Monday.
  ['0 0 12 ? * 6#3', 'UTC', START, ['2024-01-19T12:00:00Z', '2024-02-16T12:00:00Z', '2024-03-15T12:00:00Z']],
  [
    '0 0 12 ? * MON#1',
    'UTC',
    START,
    ['2024-02-05T12:00:00Z', '2024-03-04T12:00:00Z', '2024-04-01T12:00:00Z'],
  ],
  ['0 0 12 ? * 2#5', 'UTC', START, ['2024-01-29T12:00:00Z', '2024-04-29T12:00:00Z', '2024-07-29T12:00:00Z']],
  // Year field: single year, step, and Feb 29 only in leap years.
  [
    '0 0 12 L * ? 2025',
    'UTC',
    START,
    ['2025-01-31T12:00:00Z', '2025-02-28T12:00:00Z', '2025-03-31T12:00:00Z'],
  ],
  [
    '0 0 0 1 1 ? 2026/2',
    'UTC',
    START,
    ['2026-01-01T00:00:00Z', '2028-01-01T00:00:00Z', '2030-01-01T00:00:00Z'],
  ],
  ['0 0 0 29 2 ?', 'UTC', START, ['2024-02-29T00:00:00Z', '2028-02-29T00:00:00Z', '2032-02-29T00:00:00Z']],
  ['0 0 0 29 FEB ? 2025-2030', 'UTC', START, ['2028-02-29T00:00:00Z']],
  // Europe/Berlin: CET (+1) until Sunday 2024-03-31 02:00, CEST (+2) after.
  [
    '0 0 7 * * ?',
    'Europe/Berlin',
    '2024-03-29T12:00:00Z',
    ['2024-03-30T06:00:00Z', '2024-03-31T05:00:00Z', '2024-04-01T05:00:00Z'],
  ],
  // Berlin fall-back (2024-10-27 03:00 CEST -> 02:00 CET): the repeated 02:30 fires once, at its first occurrence.
  ['0 30 2 * * ?', 'Europe/Berlin', '2024-10-26T12:00:00Z', ['2024-10-27T00:30:00Z', '2024-10-28T01:30:00Z']],
  // America/New_York: EDT (-4) until Sunday 2024-11-03, EST (-5) after; Nov 1 is a Friday.
  [
    '0 0 9 ? * MON-FRI',
    'America/New_York',
    '2024-11-01T00:00:00Z',
    ['2024-11-01T13:00:00Z', '2024-11-04T14:00:00Z', '2024-11-05T14:00:00Z'],
  ],
  // L-1 in New York, across the March 10 spring-forward: Feb 28 20:00 EST, Mar 30 and Apr 29 20:00 EDT.
  [
    '0 0 20 L-1 * ?',
    'America/New_York',
    '2024-01-31T23:30:00Z',
    ['2024-02-29T01:00:00Z', '2024-03-31T00:00:00Z', '2024-04-30T00:00:00Z'],
  ],
  // Asia/Kolkata (+05:30, no DST): midnight on the last day is 18:30 UTC the day before.
  [
    '0 0 0 L * ?',
    'Asia/Kolkata',
    START,
    ['2024-01-30T18:30:00Z', '2024-02-28T18:30:00Z', '2024-03-30T18:30:00Z'],
  ],
];

describe('parseQuartz', () => {
  it.each(FIRE_TIMES)('%s in %s after %s', (expression, timezone, after, expected) => {
    const schedule = parseQuartz(expression, timezone);
    const runs = schedule.nextRuns(expected.length, new Date(after)).map((d) => d.toISOString());
    expect(runs).toEqual(expected.map((iso) => new Date(iso).toISOString()));
  });

  it('returns fire times strictly after the given instant', () => {
    const schedule = parseQuartz('0 0 12 * * ?');
    expect(schedule.next(new Date('2024-01-10T12:00:00Z'))?.toISOString()).toBe('2024-01-11T12:00:00.000Z');
    expect(schedule.next(new Date('2024-01-10T11:59:59.500Z'))?.toISOString()).toBe(
      '2024-01-10T12:00:00.000Z',
    );
  });

  it('runs out when the listed years are over', () => {
    const schedule = parseQuartz('0 0 0 1 1 ? 2020');
    expect(schedule.next(new Date(START))).toBeNull();
    expect(schedule.nextRuns(5, new Date('2019-06-01T00:00:00Z')).map((d) => d.toISOString())).toEqual([
      '2020-01-01T00:00:00.000Z',
    ]);
  });

  it('moves a time inside the spring-forward gap to the first valid time (croner rule)', () => {
    // Berlin skips 02:00-03:00 on 2024-03-31; croner fires at 03:00 CEST (01:00 UTC). Quartz would pick 03:30.
    const runs = parseQuartz('0 30 2 * * ?', 'Europe/Berlin').nextRuns(2, new Date('2024-03-30T12:00:00Z'));
    expect(runs.map((d) => d.toISOString())).toEqual([
      '2024-03-31T01:00:00.000Z',
      '2024-04-01T00:30:00.000Z',
    ]);
  });

  it('refuses unknown timezones with a 400-class error', () => {
    expect(() => parseQuartz('0 0 12 * * ?', 'Mars/Olympus_Mons')).toThrow(InvalidCronError);
    expect(() => parseQuartz('0 0 12 * * ?', 'Mars/Olympus_Mons')).toThrow(/timezone 'Mars\/Olympus_Mons'/);
    expect(() => parseQuartz('0 0 12 * * ?', '')).toThrow(InvalidCronError);
  });

  it('throws InvalidCronError, a ValidationError, carrying the reason', () => {
    let caught: unknown;
    try {
      parseQuartz('0 0 12 * 13 ?');
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(InvalidCronError);
    expect(caught).toBeInstanceOf(ValidationError);
    expect((caught as InvalidCronError).status).toBe(400);
    expect((caught as InvalidCronError).message).toBe('month value 13 is out of range 1-12');
  });
});

/**
 * Expected values computed independently of the implementation: Intl's `longOffset` names the zone's
 * offset at an instant ("GMT+02:00"), and the instant of a wall-clock time is found from it.
 */
function offsetMinutes(timezone: string, at: number): number {
  const name = new Intl.DateTimeFormat('en-US', { timeZone: timezone, timeZoneName: 'longOffset' })
    .formatToParts(new Date(at))
    .find((p) => p.type === 'timeZoneName')?.value as string;
  const m = /GMT(?:([+-])(\d\d):(\d\d))?/.exec(name) as RegExpExecArray;
  return m[1] ? (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) : 0;
}
function wallTime(timezone: string, y: number, mo: number, d: number, h: number, mi: number): string {
  const asUtc = Date.UTC(y, mo - 1, d, h, mi);
  return new Date(asUtc - offsetMinutes(timezone, asUtc - 12 * 3600_000) * 60_000).toISOString();
}
function localText(timezone: string, at: Date): string {
  return new Intl.DateTimeFormat('sv-SE', {
    timeZone: timezone,
    dateStyle: 'short',
    timeStyle: 'short',
  }).format(at);
}

describe('time zones and daylight saving (Quartz: wall-clock times)', () => {
  it('weekdays at 7:30 Europe/Berlin fire at 07:30 Berlin time on both sides of the spring transition', () => {
    // 2026-03-29 (a Sunday) Berlin moves from CET (+1) to CEST (+2).
    const runs = parseQuartz('0 30 7 ? * MON-FRI', 'Europe/Berlin').nextRuns(
      6,
      new Date('2026-03-25T00:00:00Z'),
    );
    const days: [number, number][] = [
      [3, 25],
      [3, 26],
      [3, 27],
      [3, 30],
      [3, 31],
      [4, 1],
    ];
    expect(runs.map((d) => d.toISOString())).toEqual(
      days.map(([mo, d]) => wallTime('Europe/Berlin', 2026, mo, d, 7, 30)),
    );
    // Winter 06:30Z, summer 05:30Z.
    expect(runs[0].toISOString()).toBe('2026-03-25T06:30:00.000Z');
    expect(runs[3].toISOString()).toBe('2026-03-30T05:30:00.000Z');
  });

  it('fires a wall-clock time the fall-back shows twice once, at its first occurrence', () => {
    // 2026-10-25 Berlin shows 02:00-02:59 twice (CEST, then CET); New York 2026-11-01 shows 01:00-01:59 twice.
    for (const [timezone, start, end] of [
      ['Europe/Berlin', '2026-10-24T21:59:59Z', '2026-10-25T23:00:00Z'],
      ['America/New_York', '2026-11-01T03:59:59Z', '2026-11-02T05:00:00Z'],
    ]) {
      const runs = parseQuartz('0 0/30 * * * ?', timezone)
        .nextRuns(60, new Date(start))
        .filter((d) => d.getTime() < Date.parse(end));
      const local = runs.map((d) => localText(timezone, d));
      // Every half hour of the 25-hour day, each wall-clock time once: 48, not 50.
      expect(new Set(local).size).toBe(local.length);
      expect(local).toHaveLength(48);
      for (let i = 1; i < runs.length; i++) {
        const gap = runs[i].getTime() - runs[i - 1].getTime();
        // The repeated hour is skipped as a whole: one 90-minute gap, the rest 30 minutes.
        expect([30, 90]).toContain(gap / 60_000);
      }
    }
    const daily = parseQuartz('0 30 1 * * ?', 'America/New_York').nextRuns(
      2,
      new Date('2026-10-31T12:00:00Z'),
    );
    expect(daily.map((d) => d.toISOString())).toEqual([
      // The first 01:30 is still EDT (-4).
      '2026-11-01T05:30:00.000Z',
      wallTime('America/New_York', 2026, 11, 2, 1, 30),
    ]);
  });

  it('moves a time in the spring-forward gap to the first valid time, once', () => {
    // New York skips 02:00-02:59 on 2026-03-08: 02:00 and 02:30 both become 03:00 EDT (07:00Z), one fire.
    const runs = parseQuartz('0 0/30 2 * * ?', 'America/New_York').nextRuns(
      3,
      new Date('2026-03-07T12:00:00Z'),
    );
    expect(runs.map((d) => localText('America/New_York', d))).toEqual([
      '2026-03-08 03:00',
      '2026-03-09 02:00',
      '2026-03-09 02:30',
    ]);
  });

  it('writes fire times as ISO 8601 with the zone offset', () => {
    expect(isoInZone(new Date('2026-03-30T05:30:00Z'), 'Europe/Berlin')).toBe('2026-03-30T07:30:00+02:00');
    expect(isoInZone(new Date('2026-03-27T06:30:00Z'), 'Europe/Berlin')).toBe('2026-03-27T07:30:00+01:00');
    expect(isoInZone(new Date('2026-01-05T12:00:00Z'), 'America/St_Johns')).toBe('2026-01-05T08:30:00-03:30');
    expect(isoInZone(new Date('2026-01-05T12:00:00Z'), 'UTC')).toBe('2026-01-05T12:00:00Z');
  });
});

const INVALID: [expression: string, reason: string][] = [
  ['', 'empty'],
  ['* * * * *', 'has 5 fields; Quartz needs 6 or 7 (seconds first)'],
  ['0 0 0 1 1 ? 2024 1', 'has 8 fields'],
  ['hello world', 'has 2 fields'],
  ['@daily', 'has 1 field;'],
  ['a b c d e f', "'a' is not a valid seconds value"],
  ['0 0 12 1 * MON', "day-of-month '1' and day-of-week 'MON' are both specified"],
  ['0 0 12 * * *', 'are both specified'],
  ['0 0 12 ? * ?', "'?' may appear in day-of-month or day-of-week, not both"],
  ['0 0 ? * * ?', "'?' is only allowed in day-of-month or day-of-week, not in hours"],
  ['61 0 12 * * ?', 'seconds value 61 is out of range 0-59'],
  ['0 60 12 * * ?', 'minutes value 60 is out of range 0-59'],
  ['0 0 24 * * ?', 'hours value 24 is out of range 0-23'],
  ['0 0 12 32 * ?', 'day-of-month value 32 is out of range 1-31'],
  ['0 0 12 0 * ?', 'day-of-month value 0 is out of range 1-31'],
  ['0 0 12 * 13 ?', 'month value 13 is out of range 1-12'],
  ['0 0 12 ? * 8#1', 'day-of-week value 8 is out of range 1-7'],
  ['0 0 12 ? * 0', 'day-of-week value 0 is out of range 1-7'],
  ['0 0 12 ? * 2#6', "'#' in day-of-week '2#6' must be followed by a number from 1 to 5"],
  ['0 0 12 ? * 6#L', 'must be followed by a number from 1 to 5'],
  ['0 0 12 ? * MON#2,FRI#1', "'#' cannot be combined with other days"],
  ['0 0 12 ? * 6L,2', "'L' cannot be combined with other days"],
  ['0 0 12 ? * 5-6L', "day-of-week '5-6L' is not valid"],
  ['0 0 12 ? * +MON', "'+MON' is not a valid day-of-week value"],
  ['0 0 12 L-40 * ?', "offset in day-of-month 'L-40' must be at most 30 days"],
  ['0 0 12 LW,15 * ?', "'L' cannot be combined with other days in day-of-month"],
  ['0 0 12 1-5W * ?', "day-of-month '1-5W' is not valid"],
  ['0 0 12 ? FOO *', "'FOO' is not a valid month name (JAN-DEC)"],
  ['0 0 12 ? * MOO', "'MOO' is not a valid day-of-week name (SUN-SAT)"],
  ['0 0 12 ? * MONDAY', "'MONDAY' is not a valid day-of-week name"],
  ['0 0 12 * * ? 1969', 'year value 1969 is out of range 1970-2099'],
  ['0 0 12 * * ? 2100', 'year value 2100 is out of range 1970-2099'],
  ['0 0 12 * * ? 2030-2020', "year range '2030-2020' runs backwards"],
  ['0 */0 * * * ?', "step in minutes '*/0' must be between 1 and 59"],
  ['0 0 12 30 2 ?', "cron expression '0 0 12 30 2 ?' never fires"],
  ['0 0 12 31 4,6,9,11 ?', 'never fires'],
  ['0 0 12 29 2 ? 2025-2027', 'never fires'],
  ['0 0 12 L-30 2 ?', 'never fires'],
];

describe('validateQuartz', () => {
  it.each(FIRE_TIMES.map(([expression]) => expression))('accepts %s', (expression) => {
    expect(validateQuartz(expression)).toBeNull();
  });

  it.each(INVALID)('refuses %j', (expression, reason) => {
    const result = validateQuartz(expression);
    expect(result).toContain(reason);
    expect(() => parseQuartz(expression)).toThrow(InvalidCronError);
  });
});

describe('describeQuartz', () => {
  it.each([
    ['0 0 7 ? * MON-FRI', 'At 07:00:00, Monday through Friday'],
    ['0 0 12 * * ?', 'At 12:00:00, every day'],
    ['0 0/15 * * * ?', 'Every 15 minutes'],
    ['0 */15 9-16 ? * MON-FRI', 'Every 15 minutes, between 09:00 and 16:59, Monday through Friday'],
    ['*/10 * * ? * *', 'Every 10 seconds'],
    ['* * * ? * *', 'Every second'],
    ['0 * * ? * *', 'Every minute'],
    ['0 0 * ? * *', 'Every hour'],
    ['0 15 * ? * *', 'Every hour at minute 15'],
    ['0 0 */2 ? * *', 'Every 2 hours'],
    ['0 0 9-17 ? * *', 'Every hour from 09:00:00 through 17:00:00'],
    ['0 0 12 LW * ?', 'At 12:00:00 on the last weekday of the month'],
    ['0 0 23 L * ?', 'At 23:00:00 on the last day of the month'],
    ['0 0 12 L-3 * ?', 'At 12:00:00 on the last day of the month minus 3 days'],
    ['0 0 12 15W * ?', 'At 12:00:00 on the weekday nearest day 15 of the month'],
    ['0 15 10 ? * 6L', 'At 10:15:00 on the last Friday of the month'],
    ['0 15 10 ? * 6#3', 'At 10:15:00 on the third Friday of the month'],
    ['0 0 9 ? * SAT,SUN', 'At 09:00:00 on Saturday and Sunday'],
    ['0 10,44 14 ? 3 WED', 'At 14:10:00 and 14:44:00 on Wednesday in March'],
    ['0 0 0 1 1 ?', 'At 00:00:00 on January 1'],
    ['0 0 0 1/3 * ?', 'At 00:00:00, every 3 days'],
    ['0 0 12 1,15 * ? 2025', 'At 12:00:00 on days 1 and 15 of the month in 2025'],
    ['0 0 12 1 */3 ?', 'At 12:00:00 on day 1 of the month, every 3 months'],
  ])('%s', (expression, text) => {
    expect(describeQuartz(expression)).toBe(text);
  });

  it('falls back to a field-by-field reading for unusual shapes', () => {
    expect(describeQuartz('5/15 3-30/5 * ? * *')).toBe(
      'Every 15 seconds starting at second 5, every 5 minutes from minute 3 through 30',
    );
  });

  it('throws InvalidCronError for invalid expressions', () => {
    expect(() => describeQuartz('0 0 12 * * *')).toThrow(InvalidCronError);
  });
});
