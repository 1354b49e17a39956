export * from './ai-settings';
export * from './chat-model';
export * from './ai.errors';
export { AiErrorCode } from './ai-error-codes';
export { AI_METRICS_REGISTRY, AiService, FeatureModel } from './ai.service';
export type { AiStatus, JsonRequest } from './ai.service';
export { AiModule } from './ai.module';
export { estimateTokens, head, jsonObjectIn, tail } from './structured';
