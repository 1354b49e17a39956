import { DynamicModule, Global, Module } from '@nestjs/common';
import { TapyardConfig } from './config';

/** Injection token for the validated TapyardConfig. */
export const CONFIG = Symbol('TapyardConfig');

@Global()
@Module({})
export class ConfigModule {
  static forRoot(config: TapyardConfig): DynamicModule {
    return { module: ConfigModule, providers: [{ provide: CONFIG, useValue: config }], exports: [CONFIG] };
  }
}
