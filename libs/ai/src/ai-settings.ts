import { ValidationError } from '@tapyard/core';
import { AiErrorCode } from './ai-error-codes';

/** The secret that configures the language model (contract addendum, "Model providers and embeddings"). */
export const AI_SECRET = 'ai';

export const AI_PROVIDERS = ['openai', 'anthropic', 'openai-compatible'] as const;
export type AiProviderKind = (typeof AI_PROVIDERS)[number];

/** Features with their own model setting (`model.<feature>` in the secret) and their own metrics. */
export const AI_FEATURES = [
  'tapAuthoring',
  'cron',
  'sql',
  'answer',
  'assistant',
  'codegen',
  'advice',
] as const;
export type AiFeature = (typeof AI_FEATURES)[number];

/** How a structured answer is asked of an OpenAI-style server. */
export type ResponseFormatMode = 'json_schema' | 'json_object' | 'none';

export interface AiSettings {
  provider: AiProviderKind;
  baseUrl: string | null;
  apiKey: string | null;
  model: string;
  models: Partial<Record<AiFeature, string>>;
  /** Completion tokens asked for at most per model call. */
  maxOutputTokens: number;
  /** Prompt size (estimated tokens) a feature may send at most; longer inputs are cut to fit. */
  maxInputTokens: number;
  timeoutMs: number;
  maxRetries: number;
  responseFormat: ResponseFormatMode;
}

/** Settings from the secret's fields; a field that does not fit is a 400 naming it (never its value). */
export function parseAiSettings(fields: Record<string, string>): AiSettings {
  const bad = (field: string, problem: string): never => {
    throw new ValidationError(`secret '${AI_SECRET}' field '${field}' ${problem}`, [
      { field, problem },
    ]).coded(AiErrorCode.InvalidSettings);
  };
  const provider = (fields.provider ?? '').trim() as AiProviderKind;
  if (!AI_PROVIDERS.includes(provider)) bad('provider', `must be one of ${AI_PROVIDERS.join(', ')}`);
  const model = (fields.model ?? '').trim();
  if (!model) bad('model', 'is required (the model name the provider knows)');
  const baseUrl = (fields.baseUrl ?? '').trim() || null;
  if (provider === 'openai-compatible' && !baseUrl)
    bad('baseUrl', 'is required for openai-compatible servers');
  if (baseUrl) {
    let url: URL | null = null;
    try {
      url = new URL(baseUrl);
    } catch {
      bad('baseUrl', 'is not a valid URL');
    }
    if (url && url.protocol !== 'http:' && url.protocol !== 'https:') bad('baseUrl', 'must be http or https');
  }
  const models: Partial<Record<AiFeature, string>> = {};
  for (const f of AI_FEATURES) {
    const m = (fields[`model.${f}`] ?? '').trim();
    if (m) models[f] = m;
  }
  const int = (field: string, fallback: number, min: number, max: number): number => {
    const raw = fields[field];
    if (raw === undefined || raw.trim() === '') return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max)
      bad(field, `must be a whole number from ${min} to ${max}`);
    return n;
  };
  const responseFormat = (fields.responseFormat ?? 'json_schema').trim() as ResponseFormatMode;
  if (!['json_schema', 'json_object', 'none'].includes(responseFormat)) {
    bad('responseFormat', 'must be json_schema, json_object or none');
  }
  return {
    provider,
    baseUrl,
    apiKey: (fields.apiKey ?? '').trim() || null,
    model,
    models,
    maxOutputTokens: int('maxOutputTokens', 4096, 64, 200_000),
    maxInputTokens: int('maxInputTokens', 24_000, 1_000, 2_000_000),
    timeoutMs: int('timeoutMs', 120_000, 1_000, 600_000),
    maxRetries: int('maxRetries', 2, 0, 8),
    responseFormat,
  };
}

/** The model a feature uses: its own setting, else the secret's `model`. */
export function modelFor(settings: AiSettings, feature: AiFeature): string {
  return settings.models[feature] ?? settings.model;
}

/** Where the provider is, for messages and health: never a key. */
export function providerLabel(settings: AiSettings): string {
  if (!settings.baseUrl) return settings.provider;
  const u = new URL(settings.baseUrl);
  return `${settings.provider} at ${u.protocol}//${u.host}`;
}
