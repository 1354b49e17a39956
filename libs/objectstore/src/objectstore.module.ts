import { Module } from '@nestjs/common';
import { ObjectStore } from './object-store';

@Module({ providers: [ObjectStore], exports: [ObjectStore] })
export class ObjectStoreModule {}
