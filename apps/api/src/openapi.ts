import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { createLogger, loadConfig } from '@tapyard/core';
import { DESTINATION_PLUGINS } from '@tapyard/destinations';
import { DestinationSections } from '@tapyard/pipelines';
import { ApiModule } from './api.module';
import { ApiMetrics } from './metrics/metrics';
import { API_PREFIX, UNPREFIXED, apiDocument } from './swagger';

/**
 * Writes the API's OpenAPI document (what /api/docs-json serves) to stdout without a server: the app is
 * created in preview mode, which builds the module graph and reads the controllers' metadata but starts
 * no provider, so no database, Redis or object store is needed. The build turns it into the console's
 * typed client. `node dist/apps/api/src/openapi.js > openapi.json`
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger('silent', 'api');
  const app = await NestFactory.create(ApiModule.forRoot(config, logger, new ApiMetrics(config)), {
    preview: true,
    logger: false,
  });
  app.setGlobalPrefix(API_PREFIX, { exclude: UNPREFIXED });
  const sections = new DestinationSections(DESTINATION_PLUGINS.flatMap((p) => p.sections)).all();
  process.stdout.write(JSON.stringify(apiDocument(app, config, sections), null, 2) + '\n');
}

main().catch((err: unknown) => {
  console.error('could not build the OpenAPI document:', err);
  process.exit(1);
});
