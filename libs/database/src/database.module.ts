import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { CONFIG, TapyardConfig } from '@tapyard/core';
import { dataSourceOptions, openDataSource } from './data-source';

/** The metadata DataSource: connected and migrated before any other provider uses it. */
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [CONFIG],
      useFactory: (config: TapyardConfig) => dataSourceOptions(config),
      dataSourceFactory: async (options) => {
        if (!options) throw new Error('missing data source options');
        return openDataSource(options);
      },
    }),
  ],
})
export class DatabaseModule {}
