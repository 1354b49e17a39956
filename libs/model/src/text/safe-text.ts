/**
 * Text that PostgreSQL (and a log line or a JSON body) can always hold: control characters other
 * than tab, line feed and carriage return are written as `\u00XX` (PostgreSQL text refuses NUL
 * outright, and the others hide in a terminal), and lone surrogates become U+FFFD.
 */
export function safeText(text: string): string {
  CONTROL.lastIndex = 0;
  const escaped = CONTROL.test(text)
    ? text.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
    : text;
  return escaped.replace(LONE_SURROGATE, '\ufffd');
}

// Matching control characters is the point here.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
