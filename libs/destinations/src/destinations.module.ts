import { Module } from '@nestjs/common';
import { DESTINATIONS, Destination } from './destination';
import { ObjectStoreModule } from '@tapyard/objectstore';
import { MongoClients } from './mongodb/mongo-clients';
import { ObjectStoreDestination } from './objectstore/objectstore.destination';
import { MongoDbDestination } from './mongodb/mongodb.destination';
import { PgPools } from './postgres/pg-pools';
import { PostgresDestination } from './postgres/postgres.destination';

/** Adding a destination: one folder, and one entry in the registry below. */
@Module({
  imports: [ObjectStoreModule],
  providers: [
    PgPools,
    PostgresDestination,
    MongoClients,
    MongoDbDestination,
    ObjectStoreDestination,
    {
      provide: DESTINATIONS,
      inject: [PostgresDestination, MongoDbDestination, ObjectStoreDestination],
      useFactory: (...all: Destination[]) => new Map(all.map((d) => [d.name, d])),
    },
  ],
  exports: [DESTINATIONS, PgPools, MongoClients],
})
export class DestinationsModule {}
