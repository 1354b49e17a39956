import { TapyardConfig, ValidationError } from '@tapyard/core';
import type { EgressPolicy } from '@tapyard/egress';
import { builtinEmbedder } from './builtin-embedder';
import type { Embedder } from './embedder';
import { openAiCompatibleEmbedder } from './openai-embedder';
import { EmbeddingErrorCode } from './embedding-errors';

export const EMBEDDING_PROVIDERS = ['builtin', 'openai-compatible'] as const;

/**
 * The embedder the secret `embedding` describes (contract addendum), or the built-in offline model
 * when there is none.
 */
export async function createEmbedder(
  fields: Record<string, string> | null,
  policy: EgressPolicy,
  config: TapyardConfig,
): Promise<Embedder> {
  const provider = fields?.provider ?? 'builtin';
  switch (provider) {
    case 'builtin':
      return builtinEmbedder(config.embeddingModelDir);
    case 'openai-compatible':
      return openAiCompatibleEmbedder(fields ?? {}, policy, await builtinEmbedder(config.embeddingModelDir));
    default:
      throw new ValidationError(
        `secret 'embedding' names provider '${provider.slice(0, 40)}': use one of ${EMBEDDING_PROVIDERS.join(', ')}`,
      ).coded(EmbeddingErrorCode.InvalidSettings);
  }
}
