import { ServiceUnavailableError } from './errors';

/**
 * Whether an error from a database driver means the server could not be reached or dropped the
 * connection (as opposed to a bad query): an outage is answered 503 and retried, never mistaken for
 * "not found" or for the caller's mistake.
 */
export function isConnectionFailure(err: unknown): boolean {
  // Not `instanceof Error`: errors made by Node's own socket code may come from another realm.
  let e = err as DriverError | undefined;
  for (let depth = 0; typeof e === 'object' && e !== null && depth < 5; depth += 1) {
    const { code, message } = e;
    if (
      typeof code === 'string' &&
      (NETWORK_CODES.has(code) || PG_CONNECTION_CLASSES.some((c) => code.startsWith(c)))
    ) {
      return true;
    }
    if (typeof message === 'string' && CONNECTION_MESSAGES.some((m) => message.includes(m))) return true;
    e = (e.driverError ?? e.cause) as DriverError | undefined;
  }
  return false;
}

/**
 * Whether a later attempt may succeed: a service reported down, or a connection to one (the platform's
 * own database included) that was dropped or took too long to open. A job failing so is retried, not
 * ended.
 */
export function isOutage(err: unknown): boolean {
  return err instanceof ServiceUnavailableError || isConnectionFailure(err);
}

interface DriverError {
  code?: unknown;
  message?: unknown;
  driverError?: unknown;
  cause?: unknown;
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'ENOTFOUND',
]);
// SQLSTATE classes 08 (connection exception) and 57P (operator intervention: shutdown, cannot connect now).
const PG_CONNECTION_CLASSES = ['08', '57P'];
const CONNECTION_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error',
  'Connection terminated unexpectedly',
];
