import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { NestFactory } from '@nestjs/core';
import type { OpenAPIObject } from '@nestjs/swagger';
import { TapyardConfig, createLogger, loadConfig } from '@tapyard/core';
import { DESTINATION_PLUGINS } from '@tapyard/destinations';
import { DestinationSections } from '@tapyard/pipelines';
import { ApiModule } from './api.module';
import { ApiMetrics } from './metrics/metrics';
import { API_PREFIX, UNPREFIXED, apiDocument } from './swagger';

/**
 * The API's OpenAPI document (what /api/docs-json serves) without a server: the app is created in preview
 * mode, which builds the module graph and reads the controllers' metadata but starts no provider, so no
 * database, Redis or object store is needed. The build turns it into the console's typed client.
 */
export async function offlineDocument(config: TapyardConfig): Promise<OpenAPIObject> {
  const logger = createLogger('silent', 'api');
  const app = await NestFactory.create(ApiModule.forRoot(config, logger, new ApiMetrics(config)), {
    preview: true,
    logger: false,
  });
  app.setGlobalPrefix(API_PREFIX, { exclude: UNPREFIXED });
  const sections = new DestinationSections(DESTINATION_PLUGINS.flatMap((p) => p.sections)).all();
  return apiDocument(app, config, sections);
}

/**
 * The configuration the document is made with. The document holds no secret, so a throwaway master key
 * stands in for the operator's: the build neither reads that key nor needs one (a fresh machine builds
 * before anything has generated it).
 */
export function offlineConfig(env: NodeJS.ProcessEnv): TapyardConfig {
  const { TAPYARD_MASTER_KEY_FILE: _file, ...rest } = env;
  return loadConfig({ ...rest, TAPYARD_MASTER_KEY: randomBytes(32).toString('hex') });
}

// `node dist/apps/api/src/openapi.js > openapi.json` (scripts/build)
if (require.main === module) {
  offlineDocument(offlineConfig(process.env)).then(
    (document) => process.stdout.write(JSON.stringify(document, null, 2) + '\n'),
    (err: unknown) => {
      console.error('could not build the OpenAPI document:', err);
      process.exit(1);
    },
  );
}
