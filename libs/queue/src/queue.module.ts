import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { CONFIG, TapyardConfig, queuePrefix } from '@tapyard/core';
import { EnvironmentQueues } from './environment-queues';
import { QUEUES } from './queues';

const queues = Object.values(QUEUES).map((name) => ({ name }));

/** BullMQ on Redis for both apps: producers in the API, processors in the worker. */
@Module({
  imports: [
    BullModule.forRootAsync({
      inject: [CONFIG],
      useFactory: (config: TapyardConfig) => ({
        // Workers block on Redis; they need unlimited retries per request (BullMQ requirement).
        connection: { url: config.redis.url, maxRetriesPerRequest: null },
        prefix: queuePrefix(config.environment),
      }),
    }),
    BullModule.registerQueue(...queues),
  ],
  providers: [EnvironmentQueues],
  exports: [BullModule, EnvironmentQueues],
})
export class QueueModule {}
