import type { DomainCode } from '@tapyard/core';

/** The domain codes of embedding errors: the error body's `code`. */
export const EmbeddingErrorCode = {
  /** A field of the `embedding` secret does not fit (provider, baseUrl, model, limits). */
  InvalidSettings: 'embedding.invalid_settings',
  /** The built-in model is not installed, or the provider cannot be reached (or its address is refused). */
  Unavailable: 'embedding.unavailable',
  /** The provider answered with an error, or not with one vector per input. */
  ProviderFailed: 'embedding.provider_failed',
} as const satisfies Record<string, DomainCode>;
