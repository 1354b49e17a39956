import { InvalidCronError, assertTimezone, describeQuartz, parseQuartz, validateQuartz } from './quartz';

export interface EnglishSchedule {
  cronExpression: string;
  explanation: string;
  /** The next 5 fire times, ISO-8601 in UTC. */
  nextRuns: string[];
}

const DAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];
const MONTHS = [
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
];
const ORDINAL_WORDS = ['first', 'second', 'third', 'fourth', 'fifth'];
const NUMBER_WORDS: Record<string, string> = {
  one: '1',
  two: '2',
  three: '3',
  four: '4',
  five: '5',
  six: '6',
  seven: '7',
  eight: '8',
  nine: '9',
  ten: '10',
  twelve: '12',
  fifteen: '15',
  twenty: '20',
  thirty: '30',
  other: '2',
};
// Words that carry no schedule meaning once the clauses around them are consumed.
const FILLER = new Set([
  ...'every on at the of and in a an once'.split(' '),
  ...'run runs please it job task this schedule scheduled execute trigger me'.split(' '),
]);

const DAY = `(${DAYS.join('|')})`;
const MONTH = `(${MONTHS.join('|')})`;
const SUFFIX = '(?:st|nd|rd|th)?';
const MONTH_SCOPE = '(?:the |every |each )?month';
// 7am, 7 am, 7:30pm, 19:30, 19:30:15, noon, midnight; a bare "at 9" is handled separately.
const TIME =
  '(?:(\\d{1,2})(?::(\\d{2}))?(?::(\\d{2}))? ?(am|pm)|(\\d{1,2}):(\\d{2})(?::(\\d{2}))?|(noon|midnight))';

interface Clock {
  h: number;
  m: number;
  s: number;
}

/** Lower-cases and rewrites synonyms so the clause patterns below stay short. */
function normalize(text: string): string {
  let s = ` ${text.toLowerCase()} `
    .replace(/o['’]?clock/g, ' ')
    .replace(/\b([ap])\.? ?m\b\.?/g, '$1m')
    .replace(/[,;!?."]+/g, ' ')
    .replace(/&/g, ' and ')
    .replace(/(\S)-(\S)/g, '$1 to $2')
    .replace(/\s+/g, ' ');
  s = s.replace(new RegExp(`\\b(?:${Object.keys(NUMBER_WORDS).join('|')})\\b`, 'g'), (w) => NUMBER_WORDS[w]);
  const synonyms: [RegExp, string][] = [
    [/\beach\b/g, 'every'],
    [/\beveryday\b/g, 'every day'],
    [/\bannually\b|\bonce a year\b/g, 'yearly'],
    [/\bonce a month\b/g, 'monthly'],
    [/\bonce a week\b/g, 'weekly'],
    [/\bonce a day\b/g, 'daily'],
    [/\bmidday\b/g, 'noon'],
    [/\bsecs?\b/g, 'seconds'],
    [/\bmins?\b/g, 'minutes'],
    [/\bhrs?\b/g, 'hours'],
    [/\b(?:work|working|business) ?days?\b|\bweekdays?\b/g, 'weekday'],
    [/\bweekends?\b/g, 'weekend'],
  ];
  for (const [pattern, replacement] of synonyms) s = s.replace(pattern, replacement);
  // Abbreviations and plurals become the full singular name ("Tues", "mondays" -> "tuesday", "monday").
  const days = `${DAYS.map((d) => `${d}s?`).join('|')}|sun|mon|tues?|weds?|thu|thur|thurs|fri|sat`;
  s = s.replace(
    new RegExp(`\\b(?:${days})\\b`, 'g'),
    (d) => DAYS.find((day) => day.startsWith(d.slice(0, 3))) ?? d,
  );
  const months = `${MONTHS.join('|')}|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec`;
  s = s.replace(
    new RegExp(`\\b(?:${months})\\b`, 'g'),
    (m) => MONTHS.find((name) => name.startsWith(m.slice(0, 3))) ?? m,
  );
  return s.replace(/\s+/g, ' ');
}

/** Reads the groups of TIME (m[1]..m[8]); null when none matched or the time does not exist. */
function toClock(m: (string | undefined)[]): Clock | null {
  if (m[1] === undefined && m[5] === undefined && m[8] === undefined) return null;
  if (m[8]) return m[8] === 'noon' ? { h: 12, m: 0, s: 0 } : { h: 0, m: 0, s: 0 };
  const twelveHour = m[4] !== undefined;
  let h = Number(twelveHour ? m[1] : m[5]);
  const min = Number((twelveHour ? m[2] : m[6]) ?? 0);
  const sec = Number((twelveHour ? m[3] : m[7]) ?? 0);
  if (twelveHour) {
    if (h < 1 || h > 12) return null;
    h = (h % 12) + (m[4] === 'pm' ? 12 : 0);
  }
  return h > 23 || min > 59 || sec > 59 ? null : { h, m: min, s: sec };
}

/** What the phrase asked for; every clause fills at most one slot. */
interface Request {
  times: Clock[];
  bareHour: number | null;
  window: [Clock, Clock] | null;
  minuteOfHour: number | null;
  every: { unit: 'second' | 'minute' | 'hour'; n: number } | null;
  everyDays: number | null;
  everyMonths: number | null;
  dom: string | null;
  dow: string | null;
  date: { month: number; day: number } | null;
  daily: boolean;
  weekly: boolean;
  monthly: boolean;
  yearly: boolean;
}

/**
 * Consumes the clauses it recognises from `text`; returns null when two clauses fight over
 * the same slot or when words it does not understand are left over.
 */
function understand(text: string): Request | null {
  let s = text;
  let ok = true;
  let matched = 0;
  const take = (pattern: string, use: (m: RegExpExecArray) => boolean | void): void => {
    const re = new RegExp(`(?<![\\w:])(?:${pattern})(?![\\w:])`);
    for (let m = re.exec(s); m && ok; m = re.exec(s)) {
      s = `${s.slice(0, m.index)} ${s.slice(m.index + m[0].length)}`;
      matched++;
      if (use(m) === false) ok = false;
    }
  };
  const r: Request = {
    times: [],
    bareHour: null,
    window: null,
    minuteOfHour: null,
    every: null,
    everyDays: null,
    everyMonths: null,
    dom: null,
    dow: null,
    date: null,
    daily: false,
    weekly: false,
    monthly: false,
    yearly: false,
  };
  const once = <K extends keyof Request>(key: K, value: Request[K]): boolean => {
    if (r[key] !== null && r[key] !== false) return false;
    r[key] = value;
    return true;
  };

  // Times first, so their digits are gone before day numbers are read.
  const hour = `(?:${TIME}|(\\d{1,2}))`;
  take(`(?:between|from) ${hour} (?:and|to|until|till) ${hour}`, (m) => {
    const from = toClock(m.slice(0, 9)) ?? bare(m[9]);
    const to = toClock([m[0], ...m.slice(10, 18)]) ?? bare(m[18]);
    return from !== null && to !== null && once('window', [from, to]);
  });
  take('(?:at )?(?:minute (\\d{1,2})|:(\\d{2})|(\\d{1,2}) (?:minutes )?past (?:the )?hour)', (m) =>
    once('minuteOfHour', Number(m[1] ?? m[2] ?? m[3])),
  );
  take(`(?:at )?${TIME}`, (m) => {
    const clock = toClock(m);
    if (!clock) return false;
    r.times.push(clock);
  });
  take('at (\\d{1,2})(?! ?(?:st|nd|rd|th)\\b)', (m) => once('bareHour', Number(m[1])));

  take('every (\\d+) (second|minute|hour)s?', (m) =>
    once('every', { unit: m[2] as 'second' | 'minute' | 'hour', n: Number(m[1]) }),
  );
  take('every (second|minute|hour)', (m) =>
    once('every', { unit: m[1] as 'second' | 'minute' | 'hour', n: 1 }),
  );
  take('hourly', () => once('every', { unit: 'hour', n: 1 }));
  take('every (\\d+) days?', (m) => once('everyDays', Number(m[1])));
  take('every (\\d+) months?', (m) => once('everyMonths', Number(m[1])));

  take(`last weekday of ${MONTH_SCOPE}`, () => once('dom', 'LW'));
  take(`last day of ${MONTH_SCOPE}|end of ${MONTH_SCOPE}`, () => once('dom', 'L'));
  take(`(last|${ORDINAL_WORDS.join('|')}|[1-5]${SUFFIX}) ${DAY}(?: of ${MONTH_SCOPE})?`, (m) => {
    const day = DAYS.indexOf(m[2]) + 1;
    const nth = m[1] === 'last' ? 0 : ORDINAL_WORDS.indexOf(m[1]) + 1 || Number.parseInt(m[1], 10);
    return once('dow', nth === 0 ? `${day}L` : `${day}#${nth}`);
  });
  take(
    `(?:on )?(?:the )?(\\d{1,2})${SUFFIX} (?:of )?${MONTH}|(?:on )?${MONTH} (?:the )?(\\d{1,2})${SUFFIX}`,
    (m) => once('date', { month: MONTHS.indexOf(m[2] ?? m[3]) + 1, day: Number(m[1] ?? m[4]) }),
  );
  take(`of ${MONTH_SCOPE}|(?:every )?monthly|every month`, () => {
    r.monthly = true;
  });
  const dayNumber = `(?:(\\d{1,2})${SUFFIX}|first)`;
  take(
    `(?:on )?(?:the )?(?:days? ${dayNumber}|(\\d{1,2})(?:st|nd|rd|th)|first)(?: (?:and )?(?:the )?${dayNumber})*`,
    (m) => {
      const days = m[0].match(/\d+|first/g)?.map((d) => (d === 'first' ? 1 : Number(d))) ?? [];
      return once('dom', [...new Set(days)].join(','));
    },
  );

  take(`${DAY} (?:to|through|thru|until|till) ${DAY}`, (m) => once('dow', `${abbr(m[1])}-${abbr(m[2])}`));
  take('weekday', () => once('dow', 'MON-FRI'));
  take('weekend', () => once('dow', 'SAT,SUN'));
  const listed: string[] = [];
  take(DAY, (m) => {
    if (!listed.includes(abbr(m[1]))) listed.push(abbr(m[1]));
  });
  if (listed.length > 0 && !once('dow', listed.join(','))) return null;
  take('daily|every day', () => {
    r.daily = true;
  });
  take('weekly|every week', () => {
    r.weekly = true;
  });
  take('yearly|(?:of )?every year', () => {
    r.yearly = true;
  });

  const leftover = s.split(' ').filter((w) => w !== '' && !FILLER.has(w));
  // Filler alone ("please run it") asks for nothing.
  return ok && matched > 0 && leftover.length === 0 ? r : null;
}

function bare(hour: string | undefined): Clock | null {
  return hour !== undefined && Number(hour) <= 23 ? { h: Number(hour), m: 0, s: 0 } : null;
}

function abbr(day: string): string {
  return day.slice(0, 3).toUpperCase();
}

/** Seconds, minutes and hours fields for the request, or null when they cannot be written in Quartz. */
function timeFields(r: Request): string[] | null {
  if (!r.every) {
    if (r.window || r.minuteOfHour !== null) return null;
    const clocks = [...r.times, ...(r.bareHour === null ? [] : [{ h: r.bareHour, m: 0, s: 0 }])];
    // Day-level schedules without a time run at midnight.
    if (clocks.length === 0) clocks.push({ h: 0, m: 0, s: 0 });
    // Several times of day share one expression only when minutes and seconds agree ("at 9am and 5pm").
    if (clocks.some((c) => c.h > 23 || c.m !== clocks[0].m || c.s !== clocks[0].s)) return null;
    const hours = [...new Set(clocks.map((c) => c.h))].sort((a, b) => a - b);
    return [String(clocks[0].s), String(clocks[0].m), hours.join(',')];
  }
  const { unit, n } = r.every;
  // "every hour at 15" means a quarter past, not 15:00.
  const minute = unit === 'hour' ? (r.minuteOfHour ?? r.bareHour ?? 0) : null;
  const extraTime =
    r.times.length > 0 || (unit !== 'hour' && (r.bareHour !== null || r.minuteOfHour !== null));
  if (extraTime || (r.bareHour !== null && r.minuteOfHour !== null) || (minute ?? 0) > 59) return null;
  if (n < 1 || n > (unit === 'hour' ? 23 : 59)) return null;
  const step = n === 1 ? '*' : `0/${n}`;
  let hours = unit === 'hour' ? step : '*';
  if (r.window) {
    const [from, to] = r.window;
    // Only whole-hour windows fit the hours field; runs stay inside the window.
    if (from.m !== 0 || from.s !== 0) return null;
    if (unit !== 'hour' && (to.m !== 0 || to.s !== 0)) return null;
    const last = unit === 'hour' && to.m >= (minute ?? 0) ? to.h : (to.h + 23) % 24;
    const span = last === from.h ? `${from.h}` : `${from.h}-${last}`;
    hours = unit === 'hour' && n > 1 ? `${span}/${n}` : span;
  }
  if (unit === 'second') return [step, '*', hours];
  if (unit === 'minute') return ['0', step, hours];
  return ['0', String(minute), hours];
}

/** Day-of-month, month and day-of-week fields, or null for contradictory requests. */
function dayFields(r: Request): string[] | null {
  let dom = r.dom;
  let month = '*';
  if (r.everyDays !== null) {
    if (dom !== null || r.everyDays < 1 || r.everyDays > 31) return null;
    dom = r.everyDays === 1 ? '*' : `1/${r.everyDays}`;
  }
  if (r.everyMonths !== null) {
    if (r.everyMonths < 1 || r.everyMonths > 12) return null;
    month = r.everyMonths === 1 ? '*' : `1/${r.everyMonths}`;
    dom ??= r.dow === null ? '1' : null;
  }
  if (r.date || r.yearly) {
    // A date in the year leaves no room for other day or month rules.
    if (dom !== null || r.dow !== null || r.monthly || r.weekly || r.everyMonths !== null) return null;
    [dom, month] = r.date ? [String(r.date.day), String(r.date.month)] : ['1', '1'];
  }
  if (dom !== null && r.dow !== null) return null;
  if (r.weekly && (dom !== null || r.monthly)) return null;
  // "monthly on monday" has no single day to pick; "first monday of the month" does (#, L).
  if (r.monthly && r.dow !== null && !/[#L]/.test(r.dow)) return null;
  if (r.monthly && r.dow === null) dom ??= '1';
  const dow = r.dow ?? (r.weekly ? 'SUN' : null);
  return dow === null ? [dom ?? '*', month, '?'] : ['?', month, dow];
}

// One field of a cron expression: digits, the special characters, L/W and day or month names. A phrase
// of five to seven such tokens is an expression, never English ("0 0 7 * * MON", "0 7 * * *").
const CRON_TOKEN = new RegExp(
  `^(?:[\\d*?/,#-]|LW|L|W|${[...DAYS, ...MONTHS].map((n) => n.slice(0, 3)).join('|')})+$`,
  'i',
);

/** Whether `description` is written as a cron expression rather than in words. */
export function looksLikeCron(description: string): boolean {
  const tokens = description.trim().split(/\s+/);
  return (
    tokens.length >= 5 &&
    tokens.length <= 7 &&
    tokens.every((t) => CRON_TOKEN.test(t)) &&
    tokens.some((t) => /[\d*?]/.test(t))
  );
}

/**
 * Turns a common English description of a schedule into a Quartz expression, or null when the
 * phrasing is not understood. A description written as a cron expression is validated as Quartz
 * instead, so that no other schedule is ever proposed for it. Throws InvalidCronError for an unknown
 * timezone, or with the reason when such an expression is not valid Quartz.
 */
export function cronFromEnglish(
  description: string,
  timezone = 'UTC',
  now = new Date(),
): EnglishSchedule | null {
  assertTimezone(timezone);
  if (looksLikeCron(description)) return explained(description.trim().split(/\s+/).join(' '), timezone, now);
  const request = understand(normalize(description));
  if (!request) return null;
  const time = timeFields(request);
  const days = dayFields(request);
  if (!time || !days) return null;
  const cronExpression = [...time, ...days].join(' ');
  // A phrase can ask for an impossible date ("every february 30th"); that is not understood either.
  if (validateQuartz(cronExpression) !== null) return null;
  return explained(cronExpression, timezone, now);
}

/** Throws InvalidCronError with the reason when `cronExpression` is not valid Quartz or never fires again. */
function explained(cronExpression: string, timezone: string, now: Date): EnglishSchedule {
  const schedule = parseQuartz(cronExpression, timezone);
  const nextRuns = schedule.nextRuns(5, now).map((d) => d.toISOString());
  if (nextRuns.length === 0) {
    throw new InvalidCronError(`cron expression '${cronExpression}' never fires again (its years are past)`);
  }
  return { cronExpression, explanation: describeQuartz(cronExpression), nextRuns };
}
