export { CODE_REPOSITORY_SECRET, CodeRepositoryService } from './code-repository.service';
export type { OpenRepository } from './code-repository.service';
export { CodeRepositoryModule } from './code-repository.module';
export * from './git';
