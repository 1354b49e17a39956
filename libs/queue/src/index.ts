export * from './queues';
export * from './queue.module';
