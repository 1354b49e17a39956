export * from './status.module';
export * from './status.service';
export * from './status.types';
export * from './status.repository';
export * from './assistant-tools';
