export * from './queues';
export * from './queue.module';
export * from './configured-worker-host';
export * from './environment-queues';
export * from './jobs';
