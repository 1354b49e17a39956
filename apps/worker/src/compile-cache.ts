import { enableCompileCache } from 'node:module';

enableCompileCache();
