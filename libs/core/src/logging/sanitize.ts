import { maskUrlCredentials } from '@tapyard/model';

/**
 * Strips credentials out of free text before it reaches a response or a log line: user:password in
 * URLs, and key=value pairs whose key looks secret. Used on third-party error messages, which often
 * echo connection strings.
 */
export function sanitize(text: string): string {
  // In one pass (two regexes retried every start of a long run of scheme characters: quadratic).
  return maskUrlCredentials(text, (userinfo) => (userinfo.includes(':') ? '***:***' : '***')).replace(
    /\b(password|passwd|pwd|secret|token|api[_-]?key|secret[_-]?key)\s*[=:]\s*[^\s,;&]+/gi,
    '$1=***',
  );
}

export function errorMessage(err: unknown): string {
  if (err instanceof AggregateError && err.errors.length > 0) {
    return sanitize(err.errors.map((e) => errorMessage(e)).join('; '));
  }
  if (err instanceof Error) return sanitize(err.message || err.name);
  return sanitize(String(err));
}
