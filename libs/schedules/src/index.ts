export {
  assertTimezone,
  describeQuartz,
  InvalidCronError,
  isoInZone,
  parseQuartz,
  validateQuartz,
} from './quartz';
export type { QuartzSchedule } from './quartz';
export { cronFromEnglish } from './english';
export type { EnglishSchedule } from './english';
