export * from './config/config';
export * from './config/config.module';
export * from './errors/errors';
export * from './logging/logger';
export * from './logging/logging.module';
export * from './logging/sanitize';
export * from './environment';
export * from './shutdown';
