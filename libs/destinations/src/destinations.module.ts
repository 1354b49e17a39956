import { Module, Type } from '@nestjs/common';
import { Registry } from 'prom-client';
import { METRICS_REGISTRY } from '@tapyard/core';
import { ObjectStoreModule } from '@tapyard/objectstore';
import { SecretsModule } from '@tapyard/secrets';
import { SinkGate } from './sinks/sink-gate';
import { SinkLedger } from './sinks/sink-ledger';
import { DESTINATIONS, Destination } from './destination';
import { MongoClients } from './mongodb/mongo-clients';
import { CreatedObjects } from './ownership/created-objects';
import { PgPools } from './postgres/pg-pools';
import { DESTINATION_PLUGINS } from './registry';
import { metered } from './metered';

const loaders = DESTINATION_PLUGINS.map((p) => p.loader).filter((l): l is Type<Destination> => l !== null);

/** The registered destination plug-ins (registry.ts), by name. */
@Module({
  imports: [ObjectStoreModule, SecretsModule],
  providers: [
    CreatedObjects,
    SinkLedger,
    SinkGate,
    PgPools,
    MongoClients,
    ...loaders,
    {
      provide: DESTINATIONS,
      inject: [{ token: METRICS_REGISTRY, optional: true }, ...loaders],
      useFactory: (registry: Registry | undefined, ...all: Destination[]) =>
        new Map(all.map((d) => [d.name, registry ? metered(d, registry) : d])),
    },
  ],
  exports: [DESTINATIONS, PgPools, MongoClients, CreatedObjects, SinkLedger, SinkGate],
})
export class DestinationsModule {}
