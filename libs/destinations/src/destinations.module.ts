import { Module } from '@nestjs/common';
import { DESTINATIONS, Destination } from './destination';
import { PgPools } from './postgres/pg-pools';
import { PostgresDestination } from './postgres/postgres.destination';

/** Adding a destination: one folder, and one entry in the registry below. */
@Module({
  providers: [
    PgPools,
    PostgresDestination,
    {
      provide: DESTINATIONS,
      inject: [PostgresDestination],
      useFactory: (...all: Destination[]) => new Map(all.map((d) => [d.name, d])),
    },
  ],
  exports: [DESTINATIONS],
})
export class DestinationsModule {}
