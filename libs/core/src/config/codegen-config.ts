import { join } from 'node:path';
import { AllowList } from './allow-list';
import { EnvReader } from './env-reader';

/** AI-written data-quality and transformation scripts (CodeGen), and the code repository. */
export interface CodegenConfig {
  /** Private git remotes the `code-repository` secret may name (everything else private is refused). */
  readonly repositoryAllow: AllowList;
  /** Local clones of code repositories (a cache: deleting it costs one fetch). */
  readonly repositoryCacheDir: string;
  /** Longest a script may take over one batch before the job's stage fails. */
  readonly batchTimeoutMs: number;
  /** Address space of a script's process. */
  readonly memoryBytes: number;
  /** CPU seconds of a script's process over a whole job. */
  readonly cpuSeconds: number;
}

export function readCodegen(r: EnvReader, dataDir: string): CodegenConfig {
  return {
    repositoryAllow: r.allowList('CODE_REPOSITORY_ALLOW'),
    repositoryCacheDir: r.string('CODE_REPOSITORY_CACHE', join(dataDir, 'git')),
    batchTimeoutMs: r.int('CODEGEN_BATCH_TIMEOUT_MS', 30000, 100, 3600000),
    memoryBytes: r.size('CODEGEN_MEMORY_LIMIT', '512mb'),
    cpuSeconds: r.int('CODEGEN_CPU_SECONDS', 600, 1, 86400),
  };
}
