import { Module } from '@nestjs/common';
import { DESTINATIONS, Destination } from './destination';
import { MongoClients } from './mongodb/mongo-clients';
import { MongoDbDestination } from './mongodb/mongodb.destination';
import { PgPools } from './postgres/pg-pools';
import { PostgresDestination } from './postgres/postgres.destination';

/** Adding a destination: one folder, and one entry in the registry below. */
@Module({
  providers: [
    PgPools,
    PostgresDestination,
    MongoClients,
    MongoDbDestination,
    {
      provide: DESTINATIONS,
      inject: [PostgresDestination, MongoDbDestination],
      useFactory: (...all: Destination[]) => new Map(all.map((d) => [d.name, d])),
    },
  ],
  exports: [DESTINATIONS, PgPools, MongoClients],
})
export class DestinationsModule {}
