import { DynamicModule, Module, Type } from '@nestjs/common';
import { Registry } from 'prom-client';
import { METRICS_REGISTRY } from '@tapyard/core';
import { ObjectStoreModule } from '@tapyard/objectstore';
import { DestinationSections } from '@tapyard/pipelines';
import { SecretsModule } from '@tapyard/secrets';
import { SinkGate } from './sinks/sink-gate';
import { SinkLedger } from './sinks/sink-ledger';
import { DESTINATIONS, Destination } from './destination';
import { MongoClients } from './mongodb/mongo-clients';
import { CreatedObjects } from './ownership/created-objects';
import { PgPools } from './postgres/pg-pools';
import type { DestinationPlugin } from './registry';
import { metered } from './metered';
import { DestinationSecretChecks } from './secret-checks';

/**
 * The destination plug-ins an app registers at boot: their loaders (DESTINATIONS, by name) and the
 * sections of `destination` they read (DestinationSections, which pipeline validation, confinement
 * and secret checks go through). Global: every module of the app sees the one registered set.
 */
@Module({})
export class DestinationsModule {
  static forRoot(plugins: readonly DestinationPlugin[]): DynamicModule {
    const loaders = plugins.map((p) => p.loader).filter((l): l is Type<Destination> => l !== null);
    return {
      module: DestinationsModule,
      global: true,
      imports: [ObjectStoreModule, SecretsModule],
      providers: [
        CreatedObjects,
        SinkLedger,
        SinkGate,
        PgPools,
        MongoClients,
        DestinationSecretChecks,
        ...loaders,
        {
          provide: DESTINATIONS,
          inject: [{ token: METRICS_REGISTRY, optional: true }, ...loaders],
          useFactory: (registry: Registry | undefined, ...all: Destination[]) =>
            new Map(all.map((d) => [d.name, registry ? metered(d, registry) : d])),
        },
        {
          provide: DestinationSections,
          useFactory: () => new DestinationSections(plugins.flatMap((p) => p.sections)),
        },
      ],
      exports: [
        DESTINATIONS,
        DestinationSections,
        PgPools,
        MongoClients,
        CreatedObjects,
        SinkLedger,
        SinkGate,
      ],
    };
  }
}
