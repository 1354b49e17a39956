import { DomainCode, ServiceUnavailableError, TapyardError, UpstreamError } from '@tapyard/core';
import { AiErrorCode } from './ai-error-codes';
import { AI_SECRET } from './ai-settings';

/** 503: the environment has no `ai` secret. */
export class AiNotConfiguredError extends ServiceUnavailableError {
  override domainCode: DomainCode = AiErrorCode.NotConfigured;
  constructor(environment: string) {
    super(
      'ai',
      `no model provider is configured for environment '${environment}': create the secret '${AI_SECRET}' ` +
        '(provider, model, and apiKey / baseUrl as needed)',
    );
  }
}

/** 502: the provider answered, but not with what was asked (after the one retry). */
export class AiAnswerError extends UpstreamError {
  override domainCode: DomainCode = AiErrorCode.UnusableAnswer;
}

/** The caller went away, so the model call was aborted; nobody reads the answer (499 in logs). */
export class AiCancelledError extends TapyardError {
  readonly status = 499;
  readonly code = 'cancelled';
  override domainCode: DomainCode = AiErrorCode.Cancelled;
}
