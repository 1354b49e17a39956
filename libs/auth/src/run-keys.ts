import { Injectable, Module } from '@nestjs/common';
import { createHash, randomBytes } from 'node:crypto';
import { AppAbility, canOn } from './ability';
import { AuthRedis } from './auth.redis';
import { parseCapability } from './capability';

/** Run keys are told apart from issued keys by their prefix, so they never touch the key map. */
export const RUN_KEY_PREFIX = 'tpy_run_';

/** What a run key may do, where, and under which name audit lines show it. */
export interface RunGrant {
  environment: string;
  /** `tap-run:<tap>`: the `key` of the run's audit lines. */
  label: string;
  capabilities: string[];
}

/**
 * What a tap script may do when it calls the platform (SERVICE_PLATFORM_HOST/PORT), at most: read
 * pipelines and jobs, discover metadata, query and search. Never a write, a secret, or administration.
 */
const RUN_KEY_ACTIONS = ['pipeline:read', 'job:read', 'metadata:read', 'search:query', 'search:vector'];
/**
 * What a tap is granted when saved: the run key's actions plus uploading into its target pipeline, and
 * for a document pipeline uploading documents into its collection (as an upload there needs both).
 */
const GRANT_ACTIONS = [...RUN_KEY_ACTIONS, 'pipeline:upload', 'document:upload'];

/**
 * The part of a saver's capabilities a tap keeps for its runs, each in the saver's own scope
 * (`pipeline:*:catalog=a` → `pipeline:read:catalog=a`, `pipeline:upload:catalog=a`;
 * `document:upload:collection=hr` stays as it is). Scheduled runs
 * have no caller, so they act with this grant: a tap never does more than whoever last changed its
 * code could do.
 */
export function tapGrant(capabilities: readonly string[]): string[] {
  const out = new Set<string>();
  for (const text of capabilities) {
    const c = parseCapability(text);
    if (typeof c === 'string') continue;
    const scope = c.scope ? `:${c.scope.key}=${c.scope.value}` : '';
    for (const wanted of GRANT_ACTIONS) {
      const [resource, action] = wanted.split(':');
      if (
        (c.resource === 'all' || c.resource === resource) &&
        (c.action === 'manage' || c.action === action)
      ) {
        out.add(`${wanted}${scope}`);
      }
    }
  }
  return [...out];
}

/**
 * The platform routes a tap run may call through the egress proxy: those a run key's actions can
 * reach (RUN_KEY_ACTIONS; an API test keeps the two in step), plus `GET /version` (any identity: which
 * platform the script talks to) and the public `GET /auth/mode`. Login, logout and every other route
 * are refused by the proxy itself, so a script can neither guess passwords nor spend the login
 * limiter's budget of the machine it runs on. `*` is one path segment.
 */
export const RUN_KEY_ROUTES: readonly string[] = [
  'GET /api/v1/version',
  'GET /api/v1/auth/mode',
  'GET /api/v1/pipelines',
  'GET /api/v1/pipeline',
  'GET /api/v1/pipeline/status',
  'GET /api/v1/pipeline/jobs',
  'GET /api/v1/pipeline/jobs/*/rejects',
  'GET /api/v1/pipeline/jobs/*/rows',
  'GET /api/v1/pipelines/*/codegen-scripts',
  'GET /api/v1/pipelines/*/codegen-scripts/*/versions',
  'GET /api/v1/pipelines/*/codegen-scripts/*/versions/*',
  'GET /api/v1/pipelines/*/incident-thresholds',
  'GET /api/v1/incidents',
  'GET /api/v1/incidents/*',
  'GET /api/v1/incidents/*/evidence',
  'GET /api/v1/metadata/*/*',
  'POST /api/v1/search/*',
  'POST /api/v1/query/postgres',
  'POST /api/v1/ai/answer',
];

const ROUTE_PATTERNS = RUN_KEY_ROUTES.map((r) => {
  const [method, path] = r.split(' ');
  return { method, segments: path.split('/').filter(Boolean) };
});

/**
 * Whether a tap run may call `method pathname` on the platform. Segments are compared decoded, and
 * a path that decodes to a separator or a dot segment is refused, so no spelling reaches a route the
 * list does not name; a spelling the API would not route is merely refused or answered 404.
 */
export function runKeyMayCall(method: string, pathname: string): boolean {
  let segments: string[];
  try {
    segments = pathname.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    return false;
  }
  if (segments.some((s) => s.includes('/') || s === '.' || s === '..')) return false;
  return ROUTE_PATTERNS.some(
    (p) =>
      p.method === method &&
      p.segments.length === segments.length &&
      p.segments.every((want, i) => want === '*' || want === segments[i]),
  );
}

/** The capabilities of a run key: the read-only part of a grant. */
export function runKeyCapabilities(grant: readonly string[]): string[] {
  return grant.filter((c) => RUN_KEY_ACTIONS.some((a) => c === a || c.startsWith(`${a}:`)));
}

/** The capabilities of `wanted` that `holder` has for their own scope (a second caller's share of a grant). */
export function heldOf(wanted: readonly string[], holder: AppAbility): string[] {
  return wanted.filter((text) => {
    const c = parseCapability(text);
    if (typeof c === 'string' || c.resource === 'all' || c.action === 'manage') return false;
    return canOn(holder, c.action, c.resource, c.scope ? { [c.scope.key]: c.scope.value } : {});
  });
}

/**
 * Short-lived keys for one tap run, kept in Redis (digest only) with a time to live, so every API
 * instance accepts them and they expire on their own if a worker dies before revoking them.
 */
@Injectable()
export class RunKeys {
  constructor(private readonly redis: AuthRedis) {}

  async issue(grant: RunGrant, ttlMs: number): Promise<string> {
    const value = `${RUN_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
    await this.redis.run((r) => r.set(key(value), JSON.stringify(grant), 'PX', Math.max(1000, ttlMs)));
    return value;
  }

  async find(value: string): Promise<RunGrant | null> {
    const raw = await this.redis.run((r) => r.get(key(value)));
    return raw ? (JSON.parse(raw) as RunGrant) : null;
  }

  async revoke(value: string): Promise<void> {
    await this.redis.run((r) => r.del(key(value)));
  }
}

function key(value: string): string {
  return `tapyard:run-key:${createHash('sha256').update(value, 'utf8').digest('hex')}`;
}

/** Run keys for the modules that start runs (taps, in the API and in workers) and the authenticator. */
@Module({ providers: [AuthRedis, RunKeys], exports: [AuthRedis, RunKeys] })
export class RunKeysModule {}
