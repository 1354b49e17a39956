export * from './config-files.service';
export * from './configfiles.module';
