import { ValidationError } from '@tapyard/core';
import { DestinationErrorCode } from '../destination-errors';

/**
 * The domains snowflake-sdk itself recognises as Snowflake's (SNOWFLAKE_DOMAINS in its url_util.js):
 * account URLs are hosts under them, `<org>-<account>.snowflakecomputing.com`,
 * `<locator>.<region>.<cloud>.snowflakecomputing.com`, `<org>-<account>.privatelink.snowflakecomputing.com`,
 * `<locator>.<region>.snowflakecomputing.cn`. (A spec compares this list with the driver's.)
 */
export const SNOWFLAKE_DOMAINS: readonly string[] = [
  'snowflakecomputing.com',
  'snowflakecomputing.cn',
  'snowflakecomputing.mil',
];

/** The driver's own rule for `account` (util.isCorrectSubdomain), so the host it builds is the one checked. */
const ACCOUNT = /^\w+(?:[.-]\w+)*$/;

/**
 * `scheme://host[:port][/]` and nothing more: user info, a path, a query or a fragment are where two URL
 * parsers can disagree on the host, and a Snowflake account URL has none of them.
 */
const ORIGIN = /^(https?):\/\/([A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\.?|\[[0-9A-Fa-f:.]+\])(?::(\d{1,5}))?\/?$/;

/** Where the Snowflake driver will connect for a secret: what the egress policy must check. */
export interface SnowflakeEndpoint {
  /** The driver's `accessUrl` (the origin alone), or null when the driver builds it from `account`. */
  accessUrl: string | null;
  /** The host (and port when the URL names one), for messages: as URL.host. */
  where: string;
  host: string;
  port: number;
}

/**
 * The endpoint a Snowflake secret names, refused (ValidationError naming the field) unless it is an
 * account URL under Snowflake's own domains or the exact `host:port` an operator allow-listed. A
 * Snowflake server steers the driver (which local file a PUT uploads and where, which directory a GET
 * writes into, redirects it follows with the login), so the secret may name only Snowflake itself, or
 * an endpoint the operator vouches for (a test double, a proxy of their own). `environment`: the
 * secret's, named in the allow-list entry a refusal suggests.
 */
export function snowflakeEndpoint(
  fields: Record<string, string>,
  allowListed: (host: string, port: number) => boolean,
  secretName: string,
  environment?: string,
): SnowflakeEndpoint {
  const account = fields.account ?? '';
  if (!ACCOUNT.test(account)) {
    throw refused(
      secretName,
      'account',
      'is not a Snowflake account identifier (letters, digits and _, in parts joined by . or -)',
      DestinationErrorCode.InvalidSecret,
    );
  }
  if (!fields.accessUrl) {
    const host = accountHost(account);
    return { accessUrl: null, where: host, host, port: 443 };
  }
  const m = ORIGIN.exec(fields.accessUrl.trim());
  if (!m) {
    throw refused(
      secretName,
      'accessUrl',
      'must be an account URL, https://<account>.snowflakecomputing.com: a scheme and a host (and port), nothing else',
    );
  }
  const protocol = m[1].toLowerCase() === 'https' ? 'https:' : 'http:';
  const host = m[2]
    .toLowerCase()
    .replace(/\.$/, '')
    .replace(/^\[|\]$/g, '');
  const port = m[3] ? Number(m[3]) : protocol === 'https:' ? 443 : 80;
  const bracketed = host.includes(':') ? `[${host}]` : host;
  const endpoint = `${bracketed}:${port}`;
  if (port < 1 || port > 65535) throw refused(secretName, 'accessUrl', 'has a port that is not valid');
  const operators = allowListed(host, port);
  if (!operators && !isSnowflakeHost(host)) {
    throw refused(
      secretName,
      'accessUrl',
      `names ${endpoint}, which is not a Snowflake account host (under ${SNOWFLAKE_DOMAINS.join(', ')}); ` +
        `an operator may allow that exact endpoint with TAP_EGRESS_ALLOW=${environment ? `${environment}=` : ''}${endpoint}`,
    );
  }
  if (protocol === 'http:' && !operators) {
    throw refused(
      secretName,
      'accessUrl',
      'uses http: only an endpoint an operator allow-listed may (use https)',
    );
  }
  const where = m[3] ? endpoint : bracketed;
  return { accessUrl: `${protocol}//${where}`, where, host, port };
}

/** A host under one of Snowflake's domains (never the bare domain: an account URL names an account). */
function isSnowflakeHost(host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  return SNOWFLAKE_DOMAINS.some((d) => h.endsWith(`.${d}`));
}

/** The host the driver builds from `account` alone (util.constructHostname). */
function accountHost(account: string): string {
  const dot = account.indexOf('.');
  if (dot < 0) return `${account}.snowflakecomputing.com`;
  const region = account.slice(dot + 1);
  if (region === 'us-west-2') return `${account.slice(0, dot)}.snowflakecomputing.com`.toLowerCase();
  const domain = /^cn-/i.test(region) ? 'snowflakecomputing.cn' : 'snowflakecomputing.com';
  return `${account.slice(0, dot)}.${region}.${domain}`.toLowerCase();
}

function refused(
  secretName: string,
  field: string,
  problem: string,
  code: (typeof DestinationErrorCode)[keyof typeof DestinationErrorCode] = DestinationErrorCode.EndpointRefused,
): ValidationError {
  return new ValidationError(`secret '${secretName}': ${field} ${problem}`, [{ field, problem }]).coded(code);
}
