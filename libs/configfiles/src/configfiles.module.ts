import { Module } from '@nestjs/common';
import { ObjectStoreModule } from '@tapyard/objectstore';
import { ConfigFilesService } from './config-files.service';

@Module({ imports: [ObjectStoreModule], providers: [ConfigFilesService], exports: [ConfigFilesService] })
export class ConfigFilesModule {}
