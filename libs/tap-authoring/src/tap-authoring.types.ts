import type { TapType } from '@tapyard/taps';

export interface BrainstormInput {
  messages: { role: 'user' | 'assistant'; content: string }[];
  currentDescription?: string;
  tapType: TapType;
}
export interface BrainstormResult {
  reply: string;
  description: string;
  suggestedEnvVars: string[];
}
export interface GenerateInput {
  description: string;
  tapName: string;
  oldScriptPath?: string;
  secretName?: string;
  tapType?: TapType;
}
export interface FixInput {
  tapName: string;
  script: string;
  diagnosis?: string;
  logs?: string;
  error?: string;
  oldScriptPath?: string;
}
export interface ReviewInput {
  tapName: string;
  script: string;
  recordCount: number;
  durationMs: number;
  logs?: string;
  oldScriptPath?: string;
}
export interface ScriptResult {
  script: string;
  packages: string[];
  scriptPath: string;
  injectedPrompts: string[];
}
export interface ChangesResult {
  script: string;
  packages: string[];
  scriptPath: string;
  changes: string[];
}
export interface ReviewResult extends ChangesResult {
  rewritten: boolean;
}
export interface Verification {
  originalMs: number;
  optimizedMs: number;
  kept: 'original' | 'optimized';
  reason: string;
}
export interface OptimizeResult extends ChangesResult {
  verification?: Verification;
}
export interface CronResult {
  cronExpression: string;
  explanation: string;
  nextRuns: string[];
}
