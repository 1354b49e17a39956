import { DynamicModule, Module } from '@nestjs/common';
import { VectorStorePlugin, VectorStoreRegistry } from './registry';

/**
 * The vector-store plug-ins an app registers at boot: the one VectorStoreRegistry that
 * VectorStoresService and the health probes build stores through. Global, like DestinationsModule:
 * every module of the app sees the one registered set.
 */
@Module({})
export class VectorStoreRegistryModule {
  static forRoot(plugins: readonly VectorStorePlugin[]): DynamicModule {
    return {
      module: VectorStoreRegistryModule,
      global: true,
      providers: [{ provide: VectorStoreRegistry, useFactory: () => new VectorStoreRegistry(plugins) }],
      exports: [VectorStoreRegistry],
    };
  }
}
