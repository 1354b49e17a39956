import { SetMetadata, applyDecorators } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { ApiExtension, ApiForbiddenResponse, ApiSecurity, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { Action, Resource, ScopeTarget } from '@tapyard/auth';
import { ErrorBodyDto } from '../http/error-body.dto';
import { TapyardRequest } from '../http/request-context';

/** Finds the resources a request touches (e.g. the pipeline named in the query) before the handler runs. */
export type ScopeResolver = (req: TapyardRequest, refs: ModuleRef) => Promise<ScopeTarget[]>;

/**
 * How a capability's scope is checked:
 * - `environment`: the route acts on the whole environment, so only an unscoped capability passes;
 * - `filtered`: a listing; any scope passes the guard and the handler returns only what is visible;
 * - `in-handler`: the resource is known only while handling (a multipart field); the handler checks;
 * - `none`: the route touches no stored resource (e.g. English to cron), so a capability in any scope passes;
 * - a resolver: the guard loads the resources and checks each. A resolver that fails denies: its error
 *   (e.g. 503 for a database outage) is the answer.
 */
export type ScopeCheck = 'environment' | 'filtered' | 'in-handler' | 'none' | ScopeResolver;

export type AccessRule =
  | { kind: 'public'; sessionWrite?: true }
  | { kind: 'signed-in' }
  | { kind: 'capability'; capability: string; action: Action; resource: Resource; scope: ScopeCheck };

export const ACCESS_RULE = 'tapyard:access-rule';

const AUTH_RESPONSES = [
  ApiSecurity('x-api-key'),
  ApiSecurity('session'),
  ApiUnauthorizedResponse({
    type: ErrorBodyDto,
    description: 'Missing, unknown, rotated-out or revoked key',
  }),
];

/** The capability a route needs, declared next to its handler. */
export function Requires(capability: `${Resource}:${Action}`, scope: ScopeCheck = 'environment') {
  const [resource, action] = capability.split(':') as [Resource, Action];
  return applyDecorators(
    SetMetadata(ACCESS_RULE, {
      kind: 'capability',
      capability,
      action,
      resource,
      scope,
    } satisfies AccessRule),
    ApiExtension('x-required-capability', capability),
    ...AUTH_RESPONSES,
    ApiForbiddenResponse({ type: ErrorBodyDto, description: `Caller lacks ${capability}` }),
  );
}

/**
 * Open to everyone; credentials, when sent and valid, still select the identity and tenant.
 * `sessionWrite`: the route changes the state of the login session it is sent with (logout), so a live
 * session cookie must come with its CSRF token, as on every other cookie-authenticated write.
 */
export function Public(options: { sessionWrite?: true } = {}) {
  return applyDecorators(
    SetMetadata(ACCESS_RULE, { kind: 'public', ...options } satisfies AccessRule),
    ApiExtension('x-required-capability', 'none'),
  );
}

/** Any authenticated identity (e.g. "who am I"). */
export function SignedIn() {
  return applyDecorators(
    SetMetadata(ACCESS_RULE, { kind: 'signed-in' } satisfies AccessRule),
    ApiExtension('x-required-capability', 'signed-in'),
    ...AUTH_RESPONSES,
  );
}
