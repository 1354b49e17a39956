import { createHash } from 'node:crypto';
import { Inject, Injectable, Optional } from '@nestjs/common';
import Ajv, { ValidateFunction } from 'ajv';
import { Logger } from 'pino';
import { Registry } from 'prom-client';
import {
  CONFIG,
  LOGGER,
  PayloadTooLargeError,
  RateLimitedError,
  ServiceUnavailableError,
  TapyardConfig,
  TapyardError,
  UpstreamError,
  errorMessage,
} from '@tapyard/core';
import { EgressPolicy, EgressRefused, egressFetch } from '@tapyard/egress';
import { SecretNotFoundError, SecretsService } from '@tapyard/secrets';
import { AI_SECRET, AiFeature, AiSettings, modelFor, parseAiSettings, providerLabel } from './ai-settings';
import { AiErrorCode } from './ai-error-codes';
import { AiAnswerError, AiCancelledError, AiNotConfiguredError } from './ai.errors';
import { AiMetrics } from './ai-metrics';
import { AnthropicChat } from './anthropic-chat';
import { ChatEvent, ChatModel, ChatRequest, ChatResult, ProviderErrors } from './chat-model';
import { OpenAiChat } from './openai-chat';
import { estimateTokens, jsonObjectIn } from './structured';

/** The Prometheus registry AI metrics go to (the API's); without one they are kept in a private one. */
export const AI_METRICS_REGISTRY = Symbol('AI_METRICS_REGISTRY');

export type AiStatus =
  | { status: 'up'; message: string }
  | { status: 'down'; message: string }
  | { status: 'not_configured'; message: string };

/** A structured request: the answer must be one JSON object valid against `schema`. */
export interface JsonRequest extends Omit<ChatRequest, 'json' | 'maxTokens' | 'tools'> {
  name: string;
  schema: Record<string, unknown>;
  /** Checks beyond the schema; returns the problems (empty when the answer will do). */
  check?: (answer: Record<string, unknown>) => string[];
}

/**
 * The language model of an environment, configured by its `ai` secret, for one feature. Calls are
 * bounded (timeout, retries with back-off on 429/5xx honouring Retry-After, an input and output token
 * budget), cancellable through the request's signal, and measured per feature and model. Prompts and
 * completions are not logged; the API key never leaves the client.
 */
export class FeatureModel {
  constructor(
    readonly feature: AiFeature,
    readonly settings: AiSettings,
    private readonly chat: ChatModel,
    private readonly metrics: AiMetrics,
    private readonly logger: Logger,
  ) {}

  get model(): string {
    return modelFor(this.settings, this.feature);
  }

  get label(): string {
    return providerLabel(this.settings);
  }

  /** Characters a feature may spend on variable inputs (logs, scripts) after `reserved` of its own. */
  inputChars(reserved = 4000): number {
    return Math.max(2000, (this.settings.maxInputTokens - estimateTokens('x'.repeat(reserved))) * 4);
  }

  async complete(req: Omit<ChatRequest, 'maxTokens'> & { maxTokens?: number }): Promise<ChatResult> {
    const full = this.bounded(req);
    const started = Date.now();
    try {
      const res = await this.chat.complete(this.model, full);
      this.record(started, 'ok', res);
      return res;
    } catch (err) {
      throw this.failed(started, err, req.signal);
    }
  }

  async *stream(req: Omit<ChatRequest, 'maxTokens'> & { maxTokens?: number }): AsyncIterable<ChatEvent> {
    const full = this.bounded(req);
    const started = Date.now();
    try {
      for await (const ev of this.chat.stream(this.model, full)) {
        if (ev.type === 'done') this.record(started, 'ok', ev.result);
        yield ev;
      }
    } catch (err) {
      throw this.failed(started, err, req.signal);
    }
  }

  /**
   * One JSON object valid against the schema. An answer that is not one (or fails `check`) is sent
   * back once with the reasons; a second miss is a 502 naming the provider.
   */
  async json<T>(req: JsonRequest): Promise<T> {
    const validate = this.validator(req.schema);
    const messages = [...req.messages];
    let problems: string[] = [];
    for (let attempt = 0; attempt < 2; attempt++) {
      const res = await this.complete({
        system: req.system,
        messages,
        json: { name: req.name, schema: req.schema },
        signal: req.signal,
      });
      const answer = jsonObjectIn(res.text);
      if (!answer) problems = ['the answer was not one JSON object'];
      else if (!validate(answer)) {
        problems = (validate.errors ?? []).map(
          (e) => `${e.instancePath || 'the object'} ${e.message ?? 'is invalid'}`,
        );
      } else problems = req.check ? req.check(answer) : [];
      if (problems.length === 0) return answer as T;
      messages.push(
        { role: 'assistant', content: res.text.slice(0, 20_000) },
        {
          role: 'user',
          content:
            `That answer cannot be used: ${problems.join('; ')}. Answer again with exactly one JSON object ` +
            `matching this schema, and nothing else:\n${JSON.stringify(req.schema)}`,
        },
      );
    }
    throw new AiAnswerError(
      `the model provider (${this.label}, model ${this.model}) gave no usable answer twice: ${problems
        .slice(0, 3)
        .join('; ')
        .slice(0, 400)}`,
    );
  }

  private bounded(req: Omit<ChatRequest, 'maxTokens'> & { maxTokens?: number }): ChatRequest {
    const size = estimateTokens(req.system) + req.messages.reduce((n, m) => n + estimateTokens(m.content), 0);
    if (size > this.settings.maxInputTokens) {
      throw new PayloadTooLargeError(
        `the ${this.feature} prompt is about ${size} tokens, over the ${this.settings.maxInputTokens} the ` +
          `'${AI_SECRET}' secret allows (maxInputTokens); send less text`,
      ).coded(AiErrorCode.PromptTooLarge);
    }
    return {
      ...req,
      maxTokens: Math.min(req.maxTokens ?? this.settings.maxOutputTokens, this.settings.maxOutputTokens),
    };
  }

  private record(started: number, outcome: string, res?: ChatResult): void {
    const labels = { feature: this.feature, model: this.model };
    this.metrics.duration.observe({ ...labels, outcome }, (Date.now() - started) / 1000);
    if (res) {
      this.metrics.tokens.inc({ ...labels, kind: 'input' }, res.usage.input);
      this.metrics.tokens.inc({ ...labels, kind: 'output' }, res.usage.output);
    }
    this.logger.info(
      {
        feature: this.feature,
        provider: this.settings.provider,
        model: this.model,
        ms: Date.now() - started,
        outcome,
        inputTokens: res?.usage.input,
        outputTokens: res?.usage.output,
      },
      'model call',
    );
  }

  private failed(started: number, err: unknown, signal?: AbortSignal): Error {
    if (err instanceof TapyardError) {
      this.record(started, 'error');
      return err;
    }
    const cancelled = signal?.aborted || err instanceof this.chat.errors.APIUserAbortError;
    this.record(started, cancelled ? 'cancelled' : 'error');
    return providerError(this.settings, this.chat.errors, err, cancelled === true);
  }

  private validator(schema: Record<string, unknown>): ValidateFunction {
    return ajv.compile(schema);
  }
}

const ajv = new Ajv({ allErrors: true, strict: false });

/** A client library's failure as the caller sees it: named by the provider, never carrying the key. */
export function providerError(
  settings: AiSettings,
  errors: ProviderErrors,
  err: unknown,
  cancelled: boolean,
): Error {
  const label = providerLabel(settings);
  const scrub = (text: string): string =>
    settings.apiKey ? text.split(settings.apiKey).join('[redacted]') : text;
  if (cancelled)
    return new AiCancelledError(`the request was cancelled, so the call to ${label} was aborted`);
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof EgressRefused)
      return new ServiceUnavailableError('ai', `model provider ${label}: ${e.message}`).coded(
        AiErrorCode.Unavailable,
      );
  }
  if (err instanceof errors.APIConnectionError) {
    return new ServiceUnavailableError(
      'ai',
      `the model provider (${label}) is unreachable: ${scrub(errorMessage(err)).slice(0, 200)}`,
    ).coded(AiErrorCode.Unavailable);
  }
  const api = err instanceof errors.APIError ? err : null;
  if (api) {
    const status = api.status ?? 0;
    if (status === 401 || status === 403) {
      return new UpstreamError(
        `the model provider (${label}) refused the credentials in secret '${AI_SECRET}' (HTTP ${status})`,
      ).coded(AiErrorCode.CredentialsRefused);
    }
    if (status === 429) {
      const after = Number(api.headers?.get?.('retry-after') ?? '');
      return new RateLimitedError(
        `the model provider (${label}) is rate limiting requests; retries were exhausted`,
        Number.isFinite(after) && after > 0 ? Math.ceil(after) : 30,
      ).coded(AiErrorCode.RateLimited);
    }
    const text = scrub(api.message).slice(0, 300);
    return status >= 500
      ? new ServiceUnavailableError(
          'ai',
          `the model provider (${label}) failed with HTTP ${status}: ${text}`,
        ).coded(AiErrorCode.Unavailable)
      : new UpstreamError(`the model provider (${label}) answered HTTP ${status || 'error'}: ${text}`).coded(
          AiErrorCode.ProviderFailed,
        );
  }
  return new UpstreamError(
    `the call to the model provider (${label}) failed: ${scrub(errorMessage(err)).slice(0, 200)}`,
  ).coded(AiErrorCode.ProviderFailed);
}

/** Model providers per environment, from the `ai` secret; a changed secret gives a new client. */
@Injectable()
export class AiService {
  private readonly policy: EgressPolicy;
  private readonly metrics: AiMetrics;
  private readonly made = new Map<string, { fingerprint: string; settings: AiSettings; chat: ChatModel }>();

  constructor(
    @Inject(CONFIG) config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly secrets: SecretsService,
    @Optional() @Inject(AI_METRICS_REGISTRY) registry?: Registry,
  ) {
    // The provider's address comes from a secret, a caller's choice: it passes the egress policy
    // (a local Ollama or vLLM on a private address needs TAP_EGRESS_ALLOW, for the secret's environment).
    this.policy = new EgressPolicy(config.egressAllow);
    this.metrics = new AiMetrics(registry ?? new Registry());
  }

  /** Whether the environment has a provider configured (features with a deterministic path ask). */
  async configured(environment: string): Promise<boolean> {
    return (await this.fields(environment)) !== null;
  }

  /** The feature's model; 503 naming the secret when there is none. */
  async model(environment: string, feature: AiFeature): Promise<FeatureModel> {
    const found = await this.client(environment);
    if (!found) throw new AiNotConfiguredError(environment);
    return new FeatureModel(feature, found.settings, found.chat, this.metrics, this.logger);
  }

  /** The model, or null when none is configured (optional features such as aiExplanation). */
  async optionalModel(environment: string, feature: AiFeature): Promise<FeatureModel | null> {
    return (await this.configured(environment)) ? this.model(environment, feature) : null;
  }

  /** For /health/services: configured, and answering its model list. */
  async status(environment: string, timeoutMs: number): Promise<AiStatus> {
    let found;
    try {
      found = await this.client(environment);
    } catch (err) {
      return { status: 'down', message: errorMessage(err) };
    }
    if (!found) return { status: 'not_configured', message: `no secret '${AI_SECRET}' in this environment` };
    const label = `${providerLabel(found.settings)}, model ${found.settings.model}`;
    try {
      await found.chat.probe(AbortSignal.timeout(timeoutMs));
      return { status: 'up', message: label };
    } catch (err) {
      return {
        status: 'down',
        message: errorMessage(providerError(found.settings, found.chat.errors, err, false)),
      };
    }
  }

  private async fields(environment: string): Promise<Record<string, string> | null> {
    try {
      return await this.secrets.reveal(environment, AI_SECRET);
    } catch (err) {
      if (err instanceof SecretNotFoundError) return null;
      throw err;
    }
  }

  private async client(environment: string): Promise<{ settings: AiSettings; chat: ChatModel } | null> {
    const fields = await this.fields(environment);
    if (!fields) return null;
    const fingerprint = createHash('sha256').update(JSON.stringify(fields)).digest('hex');
    const known = this.made.get(environment);
    if (known?.fingerprint === fingerprint) return known;
    const settings = parseAiSettings(fields);
    const fetchImpl = egressFetch(this.policy.for(environment), 16 * 1024 * 1024);
    const chat =
      settings.provider === 'anthropic'
        ? await AnthropicChat.open(settings, fetchImpl)
        : await OpenAiChat.open(settings, fetchImpl);
    const made = { fingerprint, settings, chat };
    this.made.set(environment, made);
    return made;
  }
}
