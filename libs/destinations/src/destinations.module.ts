import { Module } from '@nestjs/common';
import { DESTINATIONS, Destination } from './destination';
import { ObjectStoreModule } from '@tapyard/objectstore';
import { MongoClients } from './mongodb/mongo-clients';
import { ObjectStoreDestination } from './objectstore/objectstore.destination';
import { MongoDbDestination } from './mongodb/mongodb.destination';
import { CreatedObjects } from './ownership/created-objects';
import { PgPools } from './postgres/pg-pools';
import { PostgresDestination } from './postgres/postgres.destination';

/** Adding a destination: one folder, and one entry in the registry below. */
@Module({
  imports: [ObjectStoreModule],
  providers: [
    CreatedObjects,
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
  exports: [DESTINATIONS, PgPools, MongoClients, CreatedObjects],
})
export class DestinationsModule {}
