/** A tool the model may call: a name, what it does, and a JSON Schema of its arguments. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface ToolCall {
  id: string;
  name: string;
  /** The arguments as the model wrote them (JSON text; parsing and checking is the caller's). */
  arguments: string;
}

export type ChatTurn =
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; name: string; content: string };

export interface ChatRequest {
  system: string;
  messages: ChatTurn[];
  tools?: ToolSpec[];
  /** Ask for one JSON object shaped by `schema` (JSON mode, json_schema or a forced tool call). */
  json?: { name: string; schema: Record<string, unknown> };
  maxTokens: number;
  /** Aborting it aborts the HTTP request to the provider. */
  signal?: AbortSignal;
}

export interface TokenUsage {
  input: number;
  output: number;
}

export interface ChatResult {
  text: string;
  toolCalls: ToolCall[];
  usage: TokenUsage;
  /** The provider's reason, normalised: `end`, `tool_calls`, `length`, or the provider's own word. */
  stopReason: string;
}

export type ChatEvent = { type: 'text'; delta: string } | { type: 'done'; result: ChatResult };

/** An error class of a client library (its constructor's arguments are the library's business). */
type ErrorClass<E extends Error = Error> = abstract new (...args: never[]) => E;

/**
 * The client library's error classes, so its failures are told apart (cancelled, unreachable, an
 * answer) by the library that threw them, which is loaded only when the provider is first used.
 */
export interface ProviderErrors {
  APIError: ErrorClass<Error & { status?: number; headers?: { get?(name: string): string | null } }>;
  APIConnectionError: ErrorClass;
  APIUserAbortError: ErrorClass;
}

/** One provider's chat API behind the official client. */
export interface ChatModel {
  readonly provider: string;
  readonly errors: ProviderErrors;
  complete(model: string, req: ChatRequest): Promise<ChatResult>;
  /** Text arrives as deltas; tool calls and usage come whole in the final `done` event. */
  stream(model: string, req: ChatRequest): AsyncIterable<ChatEvent>;
  /** Whether the provider answers (its model list), for /health/services. */
  probe(signal: AbortSignal): Promise<void>;
}
