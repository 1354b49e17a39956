export { GitRepository, MAX_FILE_BYTES } from './git-repository';
export type { GitRepositoryOptions } from './git-repository';
export {
  RepositoryCommitNotFoundError,
  RepositoryConflictError,
  RepositoryFileTooLargeError,
  RepositoryUnavailableError,
} from './git-errors';
export { relativePathProblem, repositorySettings } from './repository-settings';
export type { RepositorySettings } from './repository-settings';
