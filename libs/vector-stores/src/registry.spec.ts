import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { VECTOR_STORES } from '@tapyard/model';
import { qdrantStore } from './qdrant/qdrant.store';
import { VECTOR_STORE_PLUGINS, VectorStoreRegistry } from './registry';
import { VectorStoreRegistryModule } from './vector-store-registry.module';

/** A provider of another module, which imports nothing: it sees the registry because forRoot made it global. */
@Injectable()
class Consumer {
  constructor(readonly registry: VectorStoreRegistry) {}
}

@Module({ providers: [Consumer] })
class ConsumerModule {}

describe('vector-store plug-ins, registered at boot', () => {
  it('the apps register a plug-in for every store the contract names', () => {
    const registry = new VectorStoreRegistry(VECTOR_STORE_PLUGINS);
    expect([...registry.names()].sort()).toEqual([...VECTOR_STORES].sort());
  });

  it('VectorStoreRegistryModule.forRoot gives every module of the app the one registered set', async () => {
    @Module({
      imports: [
        VectorStoreRegistryModule.forRoot([{ name: 'qdrant', factory: qdrantStore }]),
        ConsumerModule,
      ],
    })
    class App {}
    const app = await NestFactory.createApplicationContext(App, { logger: false });
    try {
      const { registry } = app.get(Consumer);
      expect(registry).toBe(app.get(VectorStoreRegistry));
      expect(registry.names()).toEqual(['qdrant']);
      expect(registry.factory('qdrant')).toBe(qdrantStore);
      // A store no plug-in registers: the app cannot build it (VectorStoresService answers 503).
      expect(registry.factory('milvus')).toBeNull();
    } finally {
      await app.close();
    }
  });

  it('refuses a store registered twice', () => {
    const twice = [
      { name: 'qdrant' as const, factory: qdrantStore },
      { name: 'qdrant' as const, factory: qdrantStore },
    ];
    expect(() => new VectorStoreRegistry(twice)).toThrow(/'qdrant' is registered twice/);
  });
});
