import type OpenAI from 'openai';
import type {
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { AiSettings } from './ai-settings';
import { ChatEvent, ChatModel, ChatRequest, ChatResult, ProviderErrors, ToolCall } from './chat-model';

/**
 * OpenAI's Chat Completions API through the official client: OpenAI itself and every server that
 * speaks it (vLLM, Ollama, LM Studio, llama.cpp's server, Azure-style gateways). The client retries
 * 429 and 5xx with back-off, honouring `Retry-After`.
 */
export class OpenAiChat implements ChatModel {
  readonly provider: string;
  readonly errors: ProviderErrors;
  private readonly client: OpenAI;

  /** Loads the client library (the first time a provider speaking this API is used) and makes the model. */
  static async open(settings: AiSettings, fetchImpl: typeof fetch): Promise<OpenAiChat> {
    return new OpenAiChat((await import('openai')).default, settings, fetchImpl);
  }

  private constructor(
    OpenAiClient: typeof OpenAI,
    private readonly settings: AiSettings,
    fetchImpl: typeof fetch,
  ) {
    this.provider = settings.provider;
    this.errors = OpenAiClient;
    this.client = new OpenAiClient({
      // Local servers take any key; the client insists on one.
      apiKey: settings.apiKey ?? 'unused',
      baseURL: settings.baseUrl ?? undefined,
      fetch: fetchImpl,
      maxRetries: settings.maxRetries,
      timeout: settings.timeoutMs,
    });
  }

  async probe(signal: AbortSignal): Promise<void> {
    await this.client.models.list({ signal, maxRetries: 0, timeout: 5000 });
  }

  async complete(model: string, req: ChatRequest): Promise<ChatResult> {
    const res = await this.client.chat.completions.create(
      { ...this.params(model, req, this.settings.responseFormat), stream: false },
      { signal: req.signal },
    );
    const choice = res.choices[0];
    const calls: ToolCall[] = [];
    for (const c of choice?.message.tool_calls ?? []) {
      if (c.type === 'function')
        calls.push({ id: c.id, name: c.function.name, arguments: c.function.arguments });
    }
    return {
      text: choice?.message.content ?? '',
      toolCalls: calls,
      usage: { input: res.usage?.prompt_tokens ?? 0, output: res.usage?.completion_tokens ?? 0 },
      stopReason: normaliseStop(choice?.finish_reason ?? 'stop'),
    };
  }

  async *stream(model: string, req: ChatRequest): AsyncIterable<ChatEvent> {
    const stream = await this.client.chat.completions.create(
      {
        ...this.params(model, req, this.settings.responseFormat),
        stream: true,
        stream_options: { include_usage: true },
      },
      { signal: req.signal },
    );
    let text = '';
    let stop = 'stop';
    const usage = { input: 0, output: 0 };
    // Tool calls arrive in pieces keyed by index: the id and name once, the arguments in parts.
    const calls = new Map<number, ToolCall>();
    for await (const chunk of stream) {
      if (chunk.usage) usage.input = chunk.usage.prompt_tokens;
      if (chunk.usage) usage.output = chunk.usage.completion_tokens;
      const choice = chunk.choices[0];
      if (!choice) continue;
      if (choice.delta.content) {
        text += choice.delta.content;
        yield { type: 'text', delta: choice.delta.content };
      }
      for (const d of choice.delta.tool_calls ?? []) {
        const call = calls.get(d.index) ?? { id: '', name: '', arguments: '' };
        if (d.id) call.id = d.id;
        if (d.function?.name) call.name += d.function.name;
        if (d.function?.arguments) call.arguments += d.function.arguments;
        calls.set(d.index, call);
      }
      if (choice.finish_reason) stop = choice.finish_reason;
    }
    const toolCalls = [...calls.entries()].sort((a, b) => a[0] - b[0]).map(([, c]) => c);
    yield { type: 'done', result: { text, toolCalls, usage, stopReason: normaliseStop(stop) } };
  }

  private params(
    model: string,
    req: ChatRequest,
    format: AiSettings['responseFormat'],
  ): Omit<ChatCompletionCreateParamsNonStreaming, 'stream'> {
    const messages: ChatCompletionMessageParam[] = [{ role: 'system', content: req.system }];
    for (const m of req.messages) {
      if (m.role === 'tool') messages.push({ role: 'tool', tool_call_id: m.toolCallId, content: m.content });
      else if (m.role === 'assistant' && m.toolCalls?.length) {
        messages.push({
          role: 'assistant',
          content: m.content || null,
          tool_calls: m.toolCalls.map((c) => ({
            id: c.id,
            type: 'function' as const,
            function: { name: c.name, arguments: c.arguments },
          })),
        });
      } else messages.push({ role: m.role, content: m.content });
    }
    const tools: ChatCompletionTool[] | undefined = req.tools?.map((t) => ({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: t.parameters },
    }));
    const json = req.json && !req.tools?.length ? req.json : undefined;
    return {
      model,
      messages,
      // OpenAI renamed the field; servers that copy its API know the older name.
      ...(this.provider === 'openai'
        ? { max_completion_tokens: req.maxTokens }
        : { max_tokens: req.maxTokens }),
      ...(tools?.length ? { tools } : {}),
      ...(json && format === 'json_schema'
        ? { response_format: { type: 'json_schema', json_schema: { name: json.name, schema: json.schema } } }
        : json && format === 'json_object'
          ? { response_format: { type: 'json_object' } }
          : {}),
    };
  }
}

function normaliseStop(reason: string): string {
  if (reason === 'stop') return 'end';
  if (reason === 'tool_calls' || reason === 'function_call') return 'tool_calls';
  return reason;
}
