import { ChatEvent, ChatTurn, FeatureModel, ToolCall } from '@tapyard/ai';
import { MASK } from '@tapyard/secrets';
import { AgentEvent, agentLoop } from './agent-loop';
import { AssistantTools } from './assistant-tools';
import { ToolContext } from './tool';

/** A model that asks for the given calls in its first round and answers 'done' in the next. */
function modelCalling(calls: ToolCall[]): { model: FeatureModel; requests: ChatTurn[][] } {
  const requests: ChatTurn[][] = [];
  const model = {
    async *stream(req: { messages: ChatTurn[] }): AsyncIterable<ChatEvent> {
      // What a provider's client does with the history: serialise it (whole) into a request body.
      requests.push(JSON.parse(JSON.stringify(req.messages)) as ChatTurn[]);
      const first = requests.length === 1;
      yield {
        type: 'done',
        result: {
          text: first ? '' : 'done',
          toolCalls: first ? calls : [],
          usage: { input: 0, output: 0 },
          stopReason: first ? 'tool_calls' : 'end',
        },
      };
    },
  };
  return { model: model as unknown as FeatureModel, requests };
}

/** `read_thing` reads (and records what it ran with); `save_thing` acts, so it is proposed, not run. */
function toolsDouble(): { tools: AssistantTools; ran: Record<string, unknown>[] } {
  const ran: Record<string, unknown>[] = [];
  const tools = {
    specs: () => [],
    acts: (name: string) => name === 'save_thing',
    check: async () => undefined,
    run: async (_ctx: ToolContext, _name: string, args: Record<string, unknown>) => {
      ran.push(args);
      return { ok: true };
    },
    perform: async () => ({ ok: true }),
  };
  return { tools: tools as unknown as AssistantTools, ran };
}

async function runLoop(calls: ToolCall[]) {
  const { model, requests } = modelCalling(calls);
  const { tools, ran } = toolsDouble();
  const ctx = { env: 'test', owner: 'u', signal: new AbortController().signal } as unknown as ToolContext;
  const events: AgentEvent[] = [];
  const loop = agentLoop(model, tools, ctx, [{ role: 'user', content: 'go' }], {
    maxIterations: 4,
    context: '',
    attachments: '',
    actions: { conversationId: 'c1', propose: async () => ({ actionId: 'a1', expiresAt: 'later' }) },
    answered: null,
  });
  for (let next = await loop.next(); !next.done; next = await loop.next()) events.push(next.value);
  return { events, requests, ran };
}

/** `{"a":{"a":…1…}}`, `levels` objects deep. */
const nested = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;

describe('agentLoop: tool-call arguments from the model', () => {
  // V8's JSON.parse reads 100,000 levels (10,000,000 too); masking them recursed once a level and
  // threw RangeError (from about 3,000 levels), as JSON.stringify of the stream's events did.
  it('answers a call nested 100,000 levels deep with an error the model and the client can read', async () => {
    const deep = `{"password":"hunter2","url":"redis://:p@ss@cache:6379","deep":${nested(100_000)}}`;
    for (const name of ['read_thing', 'save_thing']) {
      const { events, requests, ran } = await runLoop([{ id: 't1', name, arguments: deep }]);
      // Every event serialises, as the SSE stream does it.
      expect(() => JSON.stringify(events)).not.toThrow();
      const call = events.find((e) => e.event === 'tool_call');
      const shown = (call?.data as { arguments: Record<string, unknown> }).arguments;
      expect(shown.password).toBe(MASK);
      expect(shown.url).toBe(`redis://${MASK}@cache:6379`);
      expect(JSON.stringify(shown.deep)).toBe(`${'{"a":'.repeat(63)}"[nested too deep]"${'}'.repeat(63)}`);
      expect(events.find((e) => e.event === 'tool_result')?.data).toEqual({
        id: 't1',
        name,
        error: '500: the tool failed (the arguments nest deeper than 64 levels)',
      });
      expect(events.some((e) => e.event === 'pending_action')).toBe(false);
      expect(ran).toEqual([]);
      // The next round went out (its history serialised) without the deep arguments, and answered.
      expect(requests).toHaveLength(2);
      expect(requests[1][1]).toMatchObject({
        role: 'assistant',
        toolCalls: [{ id: 't1', name, arguments: '{}' }],
      });
      expect(events.at(-1)).toEqual({ event: 'done', data: { iterations: 2, stopReason: 'complete' } });
    }
  });

  it('runs arguments 64 levels deep, masking secret-named fields at any of them', async () => {
    // The arguments object is level 1, so `deep` holds levels 2 to 64.
    const args = { token: 'abc', deep: JSON.parse(nested(63)) as unknown, note: 'ftp://u:p@w@host/x' };
    const { events, ran } = await runLoop([
      { id: 't1', name: 'read_thing', arguments: JSON.stringify(args) },
    ]);
    expect(ran).toEqual([args]);
    const over = await runLoop([{ id: 't3', name: 'read_thing', arguments: `{"deep":${nested(64)}}` }]);
    expect(over.ran).toEqual([]);
    const saved = await runLoop([
      { id: 't2', name: 'save_thing', arguments: JSON.stringify({ ...args, deep: { a: { apiKey: 'k' } } }) },
    ]);
    const pending = saved.events.find((e) => e.event === 'pending_action')?.data as { arguments: unknown };
    expect(pending.arguments).toEqual({
      token: MASK,
      deep: { a: { apiKey: MASK } },
      note: `ftp://${MASK}@host/x`,
    });
    expect(events.at(-1)).toEqual({ event: 'done', data: { iterations: 2, stopReason: 'complete' } });
  });
});
