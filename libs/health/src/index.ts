export * from './availability.service';
export * from './health.module';
export * from './health.service';
export * from './probes/vector-stores.probe';
export * from './readiness';
