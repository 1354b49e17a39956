import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { TapyardConfig } from '@tapyard/core';
import { ErrorBodyDto } from './http/error-body.dto';

export const API_PREFIX = 'api/v1';

/** Swagger UI at /api/docs and the OpenAPI JSON at /api/docs-json. */
export function setupSwagger(app: INestApplication, config: TapyardConfig): void {
  const doc = new DocumentBuilder()
    .setTitle('Tapyard')
    .setDescription(
      'Tapyard data platform API. All endpoints are under /api/v1. Errors share one JSON body: ' +
        '`{statusCode, error, message, details?}` (see the ErrorBody schema). When API keys are enabled every ' +
        'call carries the `x-api-key` header.',
    )
    .setVersion(config.version)
    .addApiKey({ type: 'apiKey', name: 'x-api-key', in: 'header' }, 'x-api-key')
    .build();
  const document = SwaggerModule.createDocument(app, doc, { extraModels: [ErrorBodyDto] });
  SwaggerModule.setup('api/docs', app, document, { jsonDocumentUrl: 'api/docs-json' });
}
