import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { SESSION_COOKIE } from '@tapyard/auth';
import { TapyardConfig } from '@tapyard/core';
import { ErrorBodyDto } from './http/error-body.dto';

export const API_PREFIX = 'api/v1';
/**
 * Version of the interface this server implements (spec, "Versioning"): the OpenAPI `info.version`.
 * The server's own build version is a different thing, reported by `GET /version`.
 */
export const INTERFACE_VERSION = '1.28.0';

/** Swagger UI at /api/docs and the OpenAPI JSON at /api/docs-json. */
export function setupSwagger(app: INestApplication, config: TapyardConfig): void {
  const doc = new DocumentBuilder()
    .setTitle('Tapyard')
    .setDescription(
      'Tapyard data platform API. All endpoints are under /api/v1. Errors share one JSON body: ' +
        '`{statusCode, error, message, details?}` (see the ErrorBody schema). Authentication follows USE_USER_AUTH and ' +
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
  const document = SwaggerModule.createDocument(app, doc, { extraModels: [ErrorBodyDto] });
  SwaggerModule.setup('api/docs', app, document, { jsonDocumentUrl: 'api/docs-json' });
}
