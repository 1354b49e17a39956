import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, TapyardConfig } from '@tapyard/core';
import { EgressPolicy } from '@tapyard/egress';
import { SecretsService } from '@tapyard/secrets';
import { GitRepository } from './git/git-repository';
import { RepositorySettings, repositorySettings } from './git/repository-settings';

/** The secret that configures an environment's code repository (addendum "Code repository"). */
export const CODE_REPOSITORY_SECRET = 'code-repository';

export interface OpenRepository {
  settings: RepositorySettings;
  git: GitRepository;
}

/**
 * An environment's code repository, from its `code-repository` secret (null: none configured, scripts
 * live in the object store). The remote is a caller's choice (whoever may write secrets), so it is
 * reached only through the egress policy: public addresses, or private ones the operator lists in
 * CODE_REPOSITORY_ALLOW.
 */
@Injectable()
export class CodeRepositoryService {
  private readonly policy: EgressPolicy;

  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    private readonly secrets: SecretsService,
  ) {
    this.policy = new EgressPolicy(config.codegen.repositoryAllow, undefined, 'CODE_REPOSITORY_ALLOW');
  }

  async open(environment: string): Promise<OpenRepository | null> {
    const fields = await this.secrets.readSystem(environment, CODE_REPOSITORY_SECRET);
    if (!fields) return null;
    const settings = repositorySettings(fields);
    return {
      settings,
      git: new GitRepository(settings, {
        cacheDir: this.config.codegen.repositoryCacheDir,
        policy: this.policy.for(environment),
      }),
    };
  }
}
