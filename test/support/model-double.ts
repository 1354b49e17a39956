import { IncomingMessage, Server, ServerResponse, createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import type TestAgent from 'supertest/lib/agent';

/**
 * A loopback server speaking OpenAI's Chat Completions and Anthropic's Messages wire protocols
 * (JSON and SSE streaming, tool calls included), answering from a per-test script. It stands in for
 * a paid API only; our real client libraries talk to it.
 */
export type Reply =
  | { text: string }
  /** A structured answer: OpenAI gets it as the message text; Anthropic as the forced tool call's input
   * when the request forced one, else as text. */
  | { json: unknown }
  | { toolCalls: { name: string; arguments: Record<string, unknown> }[]; text?: string }
  | { status: number; retryAfter?: string; message?: string }
  /** Never answers; the request's close is recorded. */
  | { hang: true }
  /** `then`, answered `delayMs` after the request arrived (a model call in flight for that long). */
  | { delayMs: number; then: Reply };

export interface SeenRequest {
  protocol: 'openai' | 'anthropic';
  path: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
  at: number;
  /** The client closed the connection before the answer ended. */
  closedEarly: boolean;
}

export class ModelDouble {
  readonly requests: SeenRequest[] = [];
  private replies: Reply[] = [];
  private server: Server | null = null;
  private port = 0;
  private host = '127.0.0.1';
  private closeWaiters: (() => void)[] = [];

  /** `host`: where it listens (loopback; a cluster's bridge address for tests across hosts). */
  async start(host = '127.0.0.1'): Promise<this> {
    this.host = host;
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, host, resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  get address(): string {
    return `${this.host}:${this.port}`;
  }

  /** Stores the `ai` secret that points the platform at this double (`m`, the assistant `agent-1`) as `key`. */
  async useAs(http: TestAgent, key: string): Promise<void> {
    await http
      .put('/api/v1/secrets/ai')
      .set('x-api-key', key)
      .send({
        provider: 'openai-compatible',
        baseUrl: this.openaiUrl,
        model: 'm',
        'model.assistant': 'agent-1',
      })
      .expect(200);
  }
  /** Base URL for OpenAI-style clients (`…/v1`). */
  get openaiUrl(): string {
    return `http://${this.host}:${this.port}/v1`;
  }
  /** Base URL for Anthropic's client (it appends `/v1/messages`). */
  get anthropicUrl(): string {
    return `http://${this.host}:${this.port}`;
  }

  /** Replies for the next model calls, in order. A call with none left gets HTTP 500. */
  script(...replies: Reply[]): this {
    this.replies.push(...replies);
    return this;
  }

  reset(): void {
    this.replies = [];
    this.requests.length = 0;
  }

  /** Model calls only (not health probes). */
  get calls(): SeenRequest[] {
    return this.requests.filter((r) => r.path.endsWith('/chat/completions') || r.path.endsWith('/messages'));
  }

  /** Every prompt text of the call (system and messages), for assertions on what we send. */
  static promptText(r: SeenRequest): string {
    const parts: string[] = [];
    const walk = (v: unknown): void => {
      if (typeof v === 'string') parts.push(v);
      else if (Array.isArray(v)) v.forEach(walk);
      else if (v && typeof v === 'object') Object.values(v).forEach(walk);
    };
    walk(r.body.system);
    walk(r.body.messages);
    return parts.join('\n');
  }

  /** Resolves when a request that was still open is closed by the client. */
  waitForEarlyClose(timeoutMs = 10000): Promise<void> {
    if (this.requests.some((r) => r.closedEarly)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('no request was closed early')), timeoutMs);
      this.closeWaiters.push(() => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'GET' && path.endsWith('/models')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          object: 'list',
          data: [
            {
              id: 'double-model',
              object: 'model',
              created: 0,
              owned_by: 'test',
              type: 'model',
              display_name: 'double',
              created_at: '2026-01-01T00:00:00Z',
            },
          ],
          has_more: false,
          first_id: 'double-model',
          last_id: 'double-model',
        }),
      );
      return;
    }
    const protocol = path.endsWith('/chat/completions')
      ? 'openai'
      : path.endsWith('/messages')
        ? 'anthropic'
        : null;
    if (!protocol || req.method !== 'POST') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `no route ${req.method} ${path}` } }));
      return;
    }
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
    const seen: SeenRequest = {
      protocol,
      path,
      headers: req.headers,
      body,
      at: Date.now(),
      closedEarly: false,
    };
    this.requests.push(seen);
    res.on('close', () => {
      if (!res.writableFinished) {
        seen.closedEarly = true;
        this.closeWaiters.splice(0).forEach((w) => w());
      }
    });
    let reply = this.replies.shift() ?? { status: 500, message: 'the model double has no reply scripted' };
    while ('delayMs' in reply) {
      const { delayMs, then } = reply;
      await new Promise((r) => setTimeout(r, delayMs));
      reply = then;
    }
    if ('hang' in reply) return;
    if ('status' in reply) {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (reply.retryAfter !== undefined) headers['retry-after'] = reply.retryAfter;
      res.writeHead(reply.status, headers);
      const message = reply.message ?? `status ${reply.status}`;
      res.end(
        JSON.stringify(
          protocol === 'openai'
            ? { error: { message, type: 'error', code: null } }
            : { type: 'error', error: { type: 'api_error', message } },
        ),
      );
      return;
    }
    const stream = body.stream === true;
    if (protocol === 'openai') this.openai(body, reply, stream, res);
    else this.anthropic(body, reply, stream, res);
  }

  private openai(
    body: Record<string, unknown>,
    reply: Exclude<Reply, { status: number } | { hang: true } | { delayMs: number }>,
    stream: boolean,
    res: ServerResponse,
  ): void {
    const text: string =
      'json' in reply ? JSON.stringify(reply.json) : 'toolCalls' in reply ? (reply.text ?? '') : reply.text;
    const calls =
      'toolCalls' in reply
        ? reply.toolCalls.map((c, i) => ({
            id: `call_${i}_${Date.now()}`,
            type: 'function',
            function: { name: c.name, arguments: JSON.stringify(c.arguments) },
          }))
        : [];
    const finish = calls.length ? 'tool_calls' : 'stop';
    const usage = {
      prompt_tokens: promptSize(body),
      completion_tokens: Math.ceil(text.length / 4) + 1,
      total_tokens: 0,
    };
    const base = { id: 'chatcmpl-double', created: Math.floor(Date.now() / 1000), model: String(body.model) };
    if (!stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          ...base,
          object: 'chat.completion',
          choices: [
            {
              index: 0,
              message: {
                role: 'assistant',
                content: text || null,
                ...(calls.length ? { tool_calls: calls } : {}),
              },
              finish_reason: finish,
            },
          ],
          usage,
        }),
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const send = (choices: unknown[], extra: Record<string, unknown> = {}): boolean =>
      res.write(
        `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices, ...extra })}\n\n`,
      );
    send([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
    for (const piece of pieces(text)) send([{ index: 0, delta: { content: piece }, finish_reason: null }]);
    calls.forEach((c, i) => {
      send([
        {
          index: 0,
          delta: {
            tool_calls: [
              { index: i, id: c.id, type: 'function', function: { name: c.function.name, arguments: '' } },
            ],
          },
          finish_reason: null,
        },
      ]);
      for (const part of pieces(c.function.arguments))
        send([
          {
            index: 0,
            delta: { tool_calls: [{ index: i, function: { arguments: part } }] },
            finish_reason: null,
          },
        ]);
    });
    send([{ index: 0, delta: {}, finish_reason: finish }]);
    send([], { usage });
    res.end('data: [DONE]\n\n');
  }

  private anthropic(
    body: Record<string, unknown>,
    reply: Exclude<Reply, { status: number } | { hang: true } | { delayMs: number }>,
    stream: boolean,
    res: ServerResponse,
  ): void {
    const forced =
      (body.tool_choice as { type?: string; name?: string } | undefined)?.type === 'tool'
        ? (body.tool_choice as { name: string }).name
        : null;
    const blocks: (
      { type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; input: unknown }
    )[] = [];
    if ('json' in reply && forced)
      blocks.push({ type: 'tool_use', id: `toolu_${Date.now()}`, name: forced, input: reply.json });
    else if ('json' in reply) blocks.push({ type: 'text', text: JSON.stringify(reply.json) });
    else if ('toolCalls' in reply) {
      if (reply.text) blocks.push({ type: 'text', text: reply.text });
      reply.toolCalls.forEach((c, i) =>
        blocks.push({ type: 'tool_use', id: `toolu_${i}_${Date.now()}`, name: c.name, input: c.arguments }),
      );
    } else blocks.push({ type: 'text', text: reply.text });
    const stop = blocks.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn';
    const usage = { input_tokens: promptSize(body), output_tokens: 7 };
    const message = {
      id: 'msg_double',
      type: 'message',
      role: 'assistant',
      model: String(body.model),
      stop_sequence: null,
    };
    if (!stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ...message, content: blocks, stop_reason: stop, usage }));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const send = (event: string, data: Record<string, unknown>): boolean =>
      res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
    send('message_start', {
      message: {
        ...message,
        content: [],
        stop_reason: null,
        usage: { input_tokens: usage.input_tokens, output_tokens: 1 },
      },
    });
    blocks.forEach((b, index) => {
      if (b.type === 'text') {
        send('content_block_start', { index, content_block: { type: 'text', text: '' } });
        for (const piece of pieces(b.text))
          send('content_block_delta', { index, delta: { type: 'text_delta', text: piece } });
      } else {
        send('content_block_start', {
          index,
          content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} },
        });
        for (const part of pieces(JSON.stringify(b.input)))
          send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: part } });
      }
      send('content_block_stop', { index });
    });
    send('message_delta', {
      delta: { stop_reason: stop, stop_sequence: null },
      usage: { output_tokens: usage.output_tokens },
    });
    send('message_stop', {});
    res.end();
  }
}

function pieces(text: string): string[] {
  if (!text) return [];
  const size = Math.max(1, Math.ceil(text.length / 3));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

function promptSize(body: Record<string, unknown>): number {
  return Math.ceil(JSON.stringify(body.messages ?? '').length / 4);
}
