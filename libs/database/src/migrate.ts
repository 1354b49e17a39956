import { createLogger, loadConfig, ConfigError, errorMessage } from '@tapyard/core';
import { dataSourceOptions, openDataSource } from './data-source';

/** `npm run migrate`: applies pending metadata migrations and exits. */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'migrate');
  const ds = await openDataSource(dataSourceOptions(config), logger);
  await ds.destroy();
  logger.info('metadata schema is up to date');
}

main().catch((err: unknown) => {
  console.error(err instanceof ConfigError ? err.message : `migrate: ${errorMessage(err)}`);
  process.exit(1);
});
