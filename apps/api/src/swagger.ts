import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type { SchemaObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { Logger } from 'pino';
import { Authenticator, SESSION_COOKIE } from '@tapyard/auth';
import { TapyardConfig, UnauthorizedError } from '@tapyard/core';
import {
  DestinationDto,
  DestinationOptionsDto,
  DestinationSection,
  DestinationSections,
} from '@tapyard/pipelines';
import { credentialsOf } from './auth/credentials';
import { ErrorBodyDto } from './http/error-body.dto';

export const API_PREFIX = 'api/v1';
/** Routes outside the prefix: metrics and the probes, where load balancers and scrapers expect them. */
export const UNPREFIXED = ['metrics', 'livez', 'readyz'];
/**
 * Version of the interface this server implements (spec, "Versioning"): the OpenAPI `info.version`.
 * The server's own build version is a different thing, reported by `GET /version`.
 */
export const INTERFACE_VERSION = '1.28.0';

/** Everything SwaggerModule serves: the UI and its assets under /api/docs, the JSON and YAML beside it. */
const DOCS_PATH = /^\/api\/docs(?:$|[/-])/;

/**
 * Swagger UI at /api/docs and the OpenAPI JSON at /api/docs-json, as API_DOCS says: to anyone, to any
 * valid key or session (the description maps every route and the capability it needs), or not at all.
 */
export function setupSwagger(app: INestApplication, config: TapyardConfig, logger: Logger): void {
  if (config.auth.apiDocs === 'off') return;
  if (config.auth.apiDocs === 'authenticated') app.use(docsForIdentities(app.get(Authenticator), logger));
  const sections = app.get(DestinationSections).all();
  // Built on the first request for it, then kept: building it scans every controller and DTO, about
  // as much CPU as the rest of the boot, which most processes (replicas, tests) would spend for nothing.
  SwaggerModule.setup('api/docs', app, () => apiDocument(app, config, sections), {
    jsonDocumentUrl: 'api/docs-json',
  });
}

/**
 * The OpenAPI document of the routes `app` holds. It reads only the controllers' metadata, so an app
 * created in preview mode (no provider started, no peer reached) gives the same document: the build
 * generates the console's typed client from it (openapi.ts).
 */
export function apiDocument(
  app: INestApplication,
  config: TapyardConfig,
  sections: DestinationSection[],
): OpenAPIObject {
  const doc = new DocumentBuilder()
    .setTitle('Tapyard')
    .setDescription(
      'Tapyard data platform API. All endpoints are under /api/v1. Errors share one JSON body: ' +
        '`{statusCode, error, code, message, details?}` (see the ErrorBody schema). Authentication follows USE_USER_AUTH and ' +
        'USE_API_KEYS: API clients send `x-api-key`; the UI logs in (cookie `tapyard_session`, and `x-csrf-token` on writes). ' +
        'Each operation names the capability it needs in `x-required-capability` (`none` = public). ' +
        `This document describes interface version ${INTERFACE_VERSION}; \`GET /version\` reports the running ` +
        `server's own version (${config.version} here). In request bodies, \`null\` for an optional field that ` +
        'is not marked nullable means the same as leaving the field out.',
    )
    .setVersion(INTERFACE_VERSION)
    .addApiKey({ type: 'apiKey', name: 'x-api-key', in: 'header' }, 'x-api-key')
    .addCookieAuth(SESSION_COOKIE, { type: 'apiKey', in: 'cookie', name: SESSION_COOKIE }, 'session')
    .build();
  const document = SwaggerModule.createDocument(app, doc, {
    extraModels: [ErrorBodyDto, DestinationOptionsDto, ...sections.map((s) => s.dto)],
  });
  describeDestination(document, sections);
  describeJsonBodies(document);
  return document;
}

/**
 * `destination` has one optional property per section the app registered, each the section's own
 * schema: the DTO class cannot declare them (the set is known at boot), so the document is given them,
 * beside the options every pipeline has (writeMode, primaryKey).
 */
function describeDestination(document: OpenAPIObject, sections: DestinationSection[]): void {
  const schemas = (document.components ??= {}).schemas ?? {};
  const options = schemas[DestinationOptionsDto.name] as SchemaObject | undefined;
  const properties = {
    ...Object.fromEntries(
      sections.map((s) => [
        s.key,
        { description: s.description, allOf: [{ $ref: `#/components/schemas/${s.dto.name}` }] },
      ]),
    ),
    ...(options?.properties ?? {}),
  };
  schemas[DestinationDto.name] = { type: 'object', properties };
  document.components.schemas = schemas;
}

/**
 * Every route that reads a JSON body answers 415 to bytes sent under another content type
 * (JsonBodyInterceptor, one rule for all of them), so each such operation documents it.
 */
function describeJsonBodies(document: OpenAPIObject): void {
  for (const item of Object.values(document.paths)) {
    for (const op of [item.post, item.put, item.patch, item.delete]) {
      const content = op?.requestBody && 'content' in op.requestBody ? op.requestBody.content : undefined;
      if (!op || !content?.['application/json'] || op.responses['415']) continue;
      op.responses['415'] = {
        description: 'The body was sent under another content type than application/json',
        content: { 'application/json': { schema: { $ref: `#/components/schemas/${ErrorBodyDto.name}` } } },
      };
    }
  }
}

/** Lets a docs request through only with a valid key or live session; other paths pass untouched. */
function docsForIdentities(authenticator: Authenticator, logger: Logger): RequestHandler {
  return (req: Request, _res: Response, next: NextFunction): void => {
    if (!DOCS_PATH.test(req.path)) return next();
    authenticator.authenticate(credentialsOf(req)).then((auth) => {
      if (auth.ok && auth.identity.kind !== 'anonymous') return next();
      const reason = auth.ok ? 'missing credentials' : auth.reason;
      logger.warn({ route: `${req.method} ${req.path}`, reason }, 'authentication failed');
      next(
        new UnauthorizedError(
          'the API description needs authentication (API_DOCS=authenticated): send an API key in the x-api-key header or log in',
        ),
      );
    }, next);
  };
}
