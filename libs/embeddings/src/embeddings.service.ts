import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, TapyardConfig } from '@tapyard/core';
import { EgressPolicy } from '@tapyard/egress';
import { SecretNotFoundError, SecretsService } from '@tapyard/secrets';
import { createEmbedder } from './create-embedder';
import type { Embedder } from './embedder';

/** The secret that configures embeddings (contract addendum, "Model providers and embeddings"). */
export const EMBEDDING_SECRET = 'embedding';

/**
 * The embedder of an environment: from its `embedding` secret, or the built-in offline model when it
 * has none. One per environment and configuration; a changed secret gives a new one.
 */
@Injectable()
export class EmbeddingsService {
  private readonly policy: EgressPolicy;
  private readonly made = new Map<string, { fingerprint: string; embedder: Promise<Embedder> }>();

  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    private readonly secrets: SecretsService,
  ) {
    this.policy = new EgressPolicy(config.egressAllow);
  }

  async forEnvironment(environment: string): Promise<Embedder> {
    let fields: Record<string, string> | null = null;
    try {
      fields = (await this.secrets.reveal(environment, EMBEDDING_SECRET)) as Record<string, string>;
    } catch (err) {
      if (!(err instanceof SecretNotFoundError)) throw err;
    }
    const fingerprint = createHash('sha256').update(JSON.stringify(fields)).digest('hex');
    const known = this.made.get(environment);
    if (known?.fingerprint === fingerprint) return known.embedder;
    const embedder = createEmbedder(fields, this.policy.for(environment), this.config);
    this.made.set(environment, { fingerprint, embedder });
    // A failed creation (a provider down) is not kept: the next call tries again.
    embedder.catch(() => {
      if (this.made.get(environment)?.embedder === embedder) this.made.delete(environment);
    });
    return embedder;
  }
}
