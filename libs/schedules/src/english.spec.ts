import { cronFromEnglish, looksLikeCron } from './english';
import { InvalidCronError, validateQuartz } from './quartz';

// Wednesday 2024-01-10 12:34:56 UTC.
const NOW = new Date('2024-01-10T12:34:56Z');

const PHRASES: [phrase: string, expression: string][] = [
  ['every 10 seconds', '0/10 * * * * ?'],
  ['every 30 secs', '0/30 * * * * ?'],
  ['every second', '* * * * * ?'],
  ['every 5 minutes', '0 0/5 * * * ?'],
  ['every 15 min', '0 0/15 * * * ?'],
  ['every minute', '0 * * * * ?'],
  ['every 2 hours', '0 0 0/2 * * ?'],
  ['every two hours', '0 0 0/2 * * ?'],
  ['every hour', '0 0 * * * ?'],
  ['hourly', '0 0 * * * ?'],
  ['every hour at :15', '0 15 * * * ?'],
  ['every hour at minute 15', '0 15 * * * ?'],
  ['hourly at 30 past the hour', '0 30 * * * ?'],
  ['daily', '0 0 0 * * ?'],
  ['every day at 7am', '0 0 7 * * ?'],
  ['Every day at 7 AM', '0 0 7 * * ?'],
  ['at 14:30 every day', '0 30 14 * * ?'],
  ['7:30pm daily', '0 30 19 * * ?'],
  ['daily at midnight', '0 0 0 * * ?'],
  ['daily at noon', '0 0 12 * * ?'],
  ['every day at 7am and 7pm', '0 0 7,19 * * ?'],
  ['every weekday at 7am', '0 0 7 ? * MON-FRI'],
  ['weekdays at 8:45', '0 45 8 ? * MON-FRI'],
  ['every monday-friday at 8', '0 0 8 ? * MON-FRI'],
  ['weekends at 9', '0 0 9 ? * SAT,SUN'],
  ['every monday at 9:30', '0 30 9 ? * MON'],
  ['Please run it every Monday at 7 am', '0 0 7 ? * MON'],
  ['weekly on friday at 17:00', '0 0 17 ? * FRI'],
  ['every tuesday and thursday at 8pm', '0 0 20 ? * TUE,THU'],
  ['Mon, Wed & Fri at 6:15 PM', '0 15 18 ? * MON,WED,FRI'],
  ['every sunday at midnight', '0 0 0 ? * SUN'],
  ['weekly', '0 0 0 ? * SUN'],
  ['monthly', '0 0 0 1 * ?'],
  ['monthly on day 15 at 6am', '0 0 6 15 * ?'],
  ['on the 1st of every month at 00:00', '0 0 0 1 * ?'],
  ['on the 1st and 15th of every month at 9am', '0 0 9 1,15 * ?'],
  ['last day of the month at 23:00', '0 0 23 L * ?'],
  ['last weekday of the month', '0 0 0 LW * ?'],
  ['last business day of the month at 17:00', '0 0 17 LW * ?'],
  ['last friday of the month at 18:00', '0 0 18 ? * 6L'],
  ['first monday of the month', '0 0 0 ? * 2#1'],
  ['third wednesday of every month at 10am', '0 0 10 ? * 4#3'],
  ['every 3 days', '0 0 0 1/3 * ?'],
  ['every other day at 6am', '0 0 6 1/2 * ?'],
  ['every 3 months', '0 0 0 1 1/3 ?'],
  ['yearly', '0 0 0 1 1 ?'],
  ['annually', '0 0 0 1 1 ?'],
  ['every year on january 1st', '0 0 0 1 1 ?'],
  ['every year on 25 december at 8am', '0 0 8 25 12 ?'],
  ['every 15 minutes between 9am and 5pm on weekdays', '0 0/15 9-16 ? * MON-FRI'],
  ['every hour between 9am and 5pm', '0 0 9-17 * * ?'],
  ['every 10 minutes from 10pm to 2am', '0 0/10 22-1 * * ?'],
  ['every hour on weekdays', '0 0 * ? * MON-FRI'],
  ['at 12am', '0 0 0 * * ?'],
];

describe('cronFromEnglish', () => {
  it.each(PHRASES)('%j -> %s', (phrase, expression) => {
    const result = cronFromEnglish(phrase, 'UTC', NOW);
    expect(result?.cronExpression).toBe(expression);
    expect(validateQuartz(expression)).toBeNull();
    expect(result?.nextRuns).toHaveLength(5);
  });

  it.each([
    'every 90 minutes',
    'every 2 weeks',
    'every fortnight',
    'twice a day',
    'whenever you like',
    'banana',
    '',
    'at 25:00 daily',
    'at 13pm',
    'monthly on monday',
    'every february 30th',
    'every 15 minutes at 9am',
    'every day in the morning',
  ])('does not understand %j', (phrase) => {
    expect(cronFromEnglish(phrase, 'UTC', NOW)).toBeNull();
  });

  it('explains the expression and lists the next 5 runs in UTC', () => {
    expect(cronFromEnglish('every weekday at 7am', 'UTC', NOW)).toEqual({
      cronExpression: '0 0 7 ? * MON-FRI',
      explanation: 'At 07:00:00, Monday through Friday',
      // Jan 10 2024 is a Wednesday, 07:00 already passed; Jan 13/14 are the weekend.
      nextRuns: [
        '2024-01-11T07:00:00.000Z',
        '2024-01-12T07:00:00.000Z',
        '2024-01-15T07:00:00.000Z',
        '2024-01-16T07:00:00.000Z',
        '2024-01-17T07:00:00.000Z',
      ],
    });
  });

  it('computes the runs in the given timezone', () => {
    // Berlin is CET (+1) in January, so 07:00 local is 06:00 UTC.
    expect(cronFromEnglish('every weekday at 7am', 'Europe/Berlin', NOW)?.nextRuns.slice(0, 3)).toEqual([
      '2024-01-11T06:00:00.000Z',
      '2024-01-12T06:00:00.000Z',
      '2024-01-15T06:00:00.000Z',
    ]);
  });

  it('refuses an unknown timezone', () => {
    expect(() => cronFromEnglish('daily', 'Nowhere/Land', NOW)).toThrow(InvalidCronError);
  });

  it('validates and explains a description written as a Quartz expression', () => {
    expect(cronFromEnglish(' 0  30 6 ? * mon-fri ', 'UTC', NOW)).toMatchObject({
      cronExpression: '0 30 6 ? * mon-fri',
      explanation: 'At 06:30:00, Monday through Friday',
      nextRuns: expect.arrayContaining(['2024-01-11T06:30:00.000Z']),
    });
    expect(cronFromEnglish('0 0 12 L * ? 2024', 'UTC', NOW)?.nextRuns).toHaveLength(5);
  });

  it.each([
    ['0 0 25 * * *', /hours/],
    ['0 0 7 * * MON', /both specified/],
    ['0 7 * * *', /5 fields; Quartz needs 6 or 7/],
    ['0 0 12 1 1 ? 2020', /never fires again/],
  ])('refuses the invalid Quartz expression %j with the reason', (expression, reason) => {
    expect(() => cronFromEnglish(expression, 'UTC', NOW)).toThrow(reason);
    expect(() => cronFromEnglish(expression, 'UTC', NOW)).toThrow(InvalidCronError);
  });

  it.each(['every 5 minutes on mon wed fri', 'at 7 am on mon and fri', '1st and 15th at 9'])(
    'reads %j as English, not as an expression',
    (phrase) => expect(looksLikeCron(phrase)).toBe(false),
  );
});
