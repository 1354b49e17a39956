import { ServiceUnavailableError, UpstreamError, ValidationError, errorMessage } from '@tapyard/core';
import { EgressPolicy, EgressRefused, egressFetch } from '@tapyard/egress';
import type { Embedder, Tokenizer } from './embedder';
import { normalize } from './vectors';
import { EmbeddingErrorCode } from './embedding-errors';

const BATCH = 64;

/**
 * An OpenAI-compatible embeddings API (OpenAI, Ollama, vLLM, TEI, LM Studio) through the official
 * client, its connections confined by the egress policy. Chunks are measured with the built-in
 * model's tokenizer, an approximation of the remote model's own, and inputs are cut to
 * `maxInputTokens` of it (conservative: remote tokenizers rarely count fewer pieces).
 */
export async function openAiCompatibleEmbedder(
  fields: Record<string, string>,
  policy: EgressPolicy,
  measure: { tokenizer: Tokenizer },
): Promise<Embedder> {
  const model = fields.model;
  const baseURL = fields.baseUrl;
  if (!model || !baseURL) {
    throw new ValidationError(
      "secret 'embedding' with provider openai-compatible needs 'baseUrl' and 'model'",
    ).coded(EmbeddingErrorCode.InvalidSettings);
  }
  const maxInputTokens = fields.maxInputTokens ? Number(fields.maxInputTokens) : 512;
  if (!Number.isInteger(maxInputTokens) || maxInputTokens < 16) {
    throw new ValidationError(
      "secret 'embedding' has a maxInputTokens that is not a whole number ≥ 16",
    ).coded(EmbeddingErrorCode.InvalidSettings);
  }
  const dimensions = fields.dimensions ? Number(fields.dimensions) : undefined;
  if (dimensions !== undefined && (!Number.isInteger(dimensions) || dimensions < 1)) {
    throw new ValidationError(
      "secret 'embedding' has a dimensions field that is not a positive whole number",
    ).coded(EmbeddingErrorCode.InvalidSettings);
  }
  // Refused at once, before the client's retries: a refused address will not become allowed.
  await checkAddress(baseURL, policy);
  // Loaded by the first embedder of this provider: a process that never makes one never pays for it.
  const { default: OpenAI } = await import('openai');
  const client = new OpenAI({
    // Local servers take any key; the client insists on one.
    apiKey: fields.apiKey || 'unused',
    baseURL,
    fetch: egressFetch(policy),
    maxRetries: 4,
    timeout: 60_000,
  });
  const cut = (text: string): string => {
    if (measure.tokenizer.count(text) <= maxInputTokens) return text;
    // Words are dropped from the end until it fits (binary search on the word count).
    const words = text.split(/\s+/);
    let lo = 1;
    let hi = words.length;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (measure.tokenizer.count(words.slice(0, mid).join(' ')) <= maxInputTokens) lo = mid;
      else hi = mid - 1;
    }
    return words.slice(0, lo).join(' ');
  };
  const embed = async (texts: string[], signal?: AbortSignal): Promise<Float32Array[]> => {
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += BATCH) {
      const input = texts.slice(i, i + BATCH).map(cut);
      let res;
      try {
        res = await client.embeddings.create(
          { model, input, encoding_format: 'float', ...(dimensions ? { dimensions } : {}) },
          { signal },
        );
      } catch (err) {
        throw providerError(OpenAI, baseURL, err);
      }
      const rows = [...res.data].sort((a, b) => a.index - b.index);
      if (rows.length !== input.length) {
        throw new UpstreamError(
          `the embedding provider at ${baseURL} answered ${rows.length} vectors for ${input.length} inputs`,
        ).coded(EmbeddingErrorCode.ProviderFailed);
      }
      for (const r of rows) out.push(normalize(Float32Array.from(r.embedding)));
    }
    return out;
  };
  const [probe] = dimensions ? [new Float32Array(dimensions)] : await embed(['dimension probe']);
  return {
    model: `openai-compatible:${model}`,
    dimension: dimensions ?? probe.length,
    maxInputTokens,
    tokenizer: measure.tokenizer,
    embed,
  };
}

/** The provider's failure, named by its address; never the key (the client's messages carry none). */
function providerError(OpenAI: typeof import('openai').default, baseURL: string, err: unknown): Error {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof EgressRefused)
      return new ServiceUnavailableError('embedding', e.message).coded(EmbeddingErrorCode.Unavailable);
  }
  if (err instanceof OpenAI.APIConnectionError || err instanceof OpenAI.APIConnectionTimeoutError) {
    return new ServiceUnavailableError(
      'embedding',
      `the embedding provider at ${baseURL} is unreachable: ${errorMessage(err)}`,
    ).coded(EmbeddingErrorCode.Unavailable);
  }
  if (err instanceof OpenAI.APIError) {
    const status = err.status ?? 0;
    const text = `the embedding provider at ${baseURL} answered ${status || 'an error'}: ${err.message.slice(0, 300)}`;
    return status === 429 || status >= 500
      ? new ServiceUnavailableError('embedding', text).coded(EmbeddingErrorCode.Unavailable)
      : new UpstreamError(text).coded(EmbeddingErrorCode.ProviderFailed);
  }
  return err instanceof Error ? err : new Error(String(err));
}

async function checkAddress(baseURL: string, policy: EgressPolicy): Promise<void> {
  let url: URL;
  try {
    url = new URL(baseURL);
  } catch {
    throw new ValidationError("secret 'embedding' has a baseUrl that is not a valid URL").coded(
      EmbeddingErrorCode.InvalidSettings,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ValidationError("secret 'embedding' has a baseUrl that is not http or https").coded(
      EmbeddingErrorCode.InvalidSettings,
    );
  }
  try {
    await policy.check(url.hostname, url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80);
  } catch (err) {
    if (err instanceof EgressRefused)
      throw new ServiceUnavailableError('embedding', err.message).coded(EmbeddingErrorCode.Unavailable);
    throw err;
  }
}
