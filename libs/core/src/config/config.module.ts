import { DynamicModule, Global, Module } from '@nestjs/common';
import { ShutdownState } from '../shutdown';
import { TapyardConfig } from './config';

/** Injection token for the validated TapyardConfig. */
export const CONFIG = Symbol('TapyardConfig');

@Global()
@Module({})
export class ConfigModule {
  static forRoot(config: TapyardConfig): DynamicModule {
    return {
      module: ConfigModule,
      // One per application: its readiness probe and its signal handler share it.
      providers: [{ provide: CONFIG, useValue: config }, ShutdownState],
      exports: [CONFIG, ShutdownState],
    };
  }
}
