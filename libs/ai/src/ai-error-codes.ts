import type { DomainCode } from '@tapyard/core';

/** The domain codes of model-provider errors: the error body's `code`. */
export const AiErrorCode = {
  /** The environment has no `ai` secret. */
  NotConfigured: 'ai.not_configured',
  /** A field of the `ai` secret does not fit (provider, model, limits...). */
  InvalidSettings: 'ai.invalid_settings',
  /** The prompt is over the secret's maxInputTokens. */
  PromptTooLarge: 'ai.prompt_too_large',
  /** The provider answered twice with nothing usable. */
  UnusableAnswer: 'ai.unusable_answer',
  /** The provider refused the credentials of the `ai` secret. */
  CredentialsRefused: 'ai.credentials_refused',
  RateLimited: 'ai.rate_limited',
  /** The provider answered with an error, or the call failed. */
  ProviderFailed: 'ai.provider_failed',
  /** The provider cannot be reached now, failed with a 5xx, or its address is refused. */
  Unavailable: 'ai.unavailable',
  /** The caller went away, so the call was aborted. */
  Cancelled: 'ai.cancelled',
} as const satisfies Record<string, DomainCode>;
