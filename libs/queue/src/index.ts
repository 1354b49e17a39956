export * from './queues';
export * from './inline-drops';
export * from './queue.module';
export * from './configured-worker-host';
export * from './environment-queues';
export * from './jobs';
