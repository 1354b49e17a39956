import type Anthropic from '@anthropic-ai/sdk';
import type {
  MessageCreateParamsNonStreaming,
  MessageParam,
  Tool,
} from '@anthropic-ai/sdk/resources/messages';
import { AiSettings } from './ai-settings';
import { ChatEvent, ChatModel, ChatRequest, ChatResult, ProviderErrors, ToolCall } from './chat-model';

/**
 * Anthropic's Messages API through the official client (retries 429/5xx/529 honouring `Retry-After`).
 * A structured answer is asked for as a forced call of a tool whose input schema is the answer's.
 */
export class AnthropicChat implements ChatModel {
  readonly provider = 'anthropic';
  readonly errors: ProviderErrors;
  private readonly client: Anthropic;

  /** Loads the client library (the first time Anthropic is used) and makes the model. */
  static async open(settings: AiSettings, fetchImpl: typeof fetch): Promise<AnthropicChat> {
    return new AnthropicChat((await import('@anthropic-ai/sdk')).default, settings, fetchImpl);
  }

  private constructor(AnthropicClient: typeof Anthropic, settings: AiSettings, fetchImpl: typeof fetch) {
    this.errors = AnthropicClient;
    this.client = new AnthropicClient({
      apiKey: settings.apiKey ?? 'unused',
      baseURL: settings.baseUrl ?? undefined,
      fetch: fetchImpl,
      maxRetries: settings.maxRetries,
      timeout: settings.timeoutMs,
    });
  }

  async probe(signal: AbortSignal): Promise<void> {
    await this.client.models.list({}, { signal, maxRetries: 0, timeout: 5000 });
  }

  async complete(model: string, req: ChatRequest): Promise<ChatResult> {
    const res = await this.client.messages.create(
      { ...this.params(model, req), stream: false },
      { signal: req.signal },
    );
    let text = '';
    const calls: ToolCall[] = [];
    for (const block of res.content) {
      if (block.type === 'text') text += block.text;
      else if (block.type === 'tool_use') {
        if (req.json && block.name === req.json.name) text = JSON.stringify(block.input);
        else calls.push({ id: block.id, name: block.name, arguments: JSON.stringify(block.input) });
      }
    }
    return {
      text,
      toolCalls: calls,
      usage: { input: res.usage.input_tokens, output: res.usage.output_tokens },
      stopReason: normaliseStop(res.stop_reason ?? 'end_turn'),
    };
  }

  async *stream(model: string, req: ChatRequest): AsyncIterable<ChatEvent> {
    const stream = await this.client.messages.create(
      { ...this.params(model, req), stream: true },
      { signal: req.signal },
    );
    let text = '';
    let stop = 'end_turn';
    const usage = { input: 0, output: 0 };
    const calls = new Map<number, ToolCall>();
    for await (const ev of stream) {
      if (ev.type === 'message_start') {
        usage.input = ev.message.usage.input_tokens;
        usage.output = ev.message.usage.output_tokens;
      } else if (ev.type === 'content_block_start' && ev.content_block.type === 'tool_use') {
        calls.set(ev.index, { id: ev.content_block.id, name: ev.content_block.name, arguments: '' });
      } else if (ev.type === 'content_block_delta') {
        if (ev.delta.type === 'text_delta') {
          text += ev.delta.text;
          yield { type: 'text', delta: ev.delta.text };
        } else if (ev.delta.type === 'input_json_delta') {
          const call = calls.get(ev.index);
          if (call) call.arguments += ev.delta.partial_json;
        }
      } else if (ev.type === 'message_delta') {
        if (ev.delta.stop_reason) stop = ev.delta.stop_reason;
        usage.output = ev.usage.output_tokens;
      }
    }
    const toolCalls = [...calls.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([, c]) => ({ ...c, arguments: c.arguments || '{}' }));
    yield { type: 'done', result: { text, toolCalls, usage, stopReason: normaliseStop(stop) } };
  }

  private params(model: string, req: ChatRequest): Omit<MessageCreateParamsNonStreaming, 'stream'> {
    const messages: MessageParam[] = [];
    for (const m of req.messages) {
      if (m.role === 'tool') {
        // Results of one assistant turn's calls go back together, in one user message.
        const block = { type: 'tool_result' as const, tool_use_id: m.toolCallId, content: m.content };
        const last = messages[messages.length - 1];
        if (last?.role === 'user' && Array.isArray(last.content)) last.content.push(block);
        else messages.push({ role: 'user', content: [block] });
      } else if (m.role === 'assistant' && m.toolCalls?.length) {
        messages.push({
          role: 'assistant',
          content: [
            ...(m.content ? [{ type: 'text' as const, text: m.content }] : []),
            ...m.toolCalls.map((c) => ({
              type: 'tool_use' as const,
              id: c.id,
              name: c.name,
              input: parseInput(c.arguments),
            })),
          ],
        });
      } else messages.push({ role: m.role, content: m.content });
    }
    const tools: Tool[] = (req.tools ?? []).map((t) => ({
      name: t.name,
      description: t.description,
      input_schema: t.parameters as Tool['input_schema'],
    }));
    const forced = req.json && tools.length === 0;
    if (forced && req.json) {
      tools.push({
        name: req.json.name,
        description: 'Give the answer as this tool call.',
        input_schema: req.json.schema as Tool['input_schema'],
      });
    }
    return {
      model,
      system: req.system,
      messages,
      max_tokens: req.maxTokens,
      ...(tools.length ? { tools } : {}),
      ...(forced && req.json ? { tool_choice: { type: 'tool' as const, name: req.json.name } } : {}),
    };
  }
}

function parseInput(text: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(text || '{}');
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function normaliseStop(reason: string): string {
  if (reason === 'end_turn' || reason === 'stop_sequence') return 'end';
  if (reason === 'tool_use') return 'tool_calls';
  if (reason === 'max_tokens') return 'length';
  return reason;
}
