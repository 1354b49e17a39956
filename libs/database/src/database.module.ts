import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { CONFIG, TapyardConfig } from '@tapyard/core';
import { dataSourceOptions, openDataSource } from './data-source';

/** The metadata DataSource: connected and migrated before any other provider uses it. */
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [CONFIG],
      // At boot the server may still be starting (compose, a pod beside it): tried again 3 s apart.
      useFactory: (config: TapyardConfig) => ({
        ...dataSourceOptions(config),
        retryAttempts: config.database.connectRetries,
        retryDelay: 3000,
      }),
      dataSourceFactory: async (options) => {
        if (!options) throw new Error('missing data source options');
        return openDataSource(options);
      },
    }),
  ],
})
export class DatabaseModule {}
