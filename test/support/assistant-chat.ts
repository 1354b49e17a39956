import { ModelDouble } from './model-double';

/** One server-sent event of POST /assistant/chat. */
export interface SseEvent {
  event: string;
  data: Record<string, unknown>;
}

/**
 * The events of one POST /assistant/chat, read to the end of the stream. `base` is the API's
 * `/api/v1` address on a real port: the stream is read as a client reads it, not buffered by supertest.
 */
export async function chat(base: string, key: string, body: Record<string, unknown>): Promise<SseEvent[]> {
  const res = await fetch(`${base}/assistant/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
  return sseEvents(await res.text());
}

/** The events of a server-sent event stream's whole text (comments such as keep-alives left out). */
export function sseEvents(raw: string): SseEvent[] {
  return raw
    .split('\n\n')
    .map((block) => block.split('\n'))
    .filter((lines) => lines.some((l) => l.startsWith('event: ')))
    .map((lines) => ({
      event: lines.find((l) => l.startsWith('event: '))!.slice(7),
      data: JSON.parse(lines.find((l) => l.startsWith('data: '))!.slice(6)) as Record<string, unknown>,
    }));
}

/**
 * Has the model double ask for one tool call (as `key`), confirms it when it acts, and returns its
 * `tool_result` (`result`, or `error` as the model sees it: `403: …`).
 */
export async function callTool(
  double: ModelDouble,
  base: string,
  key: string,
  name: string,
  args: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  double.script({ toolCalls: [{ name, arguments: args }] }, { text: 'done' });
  let events = await chat(base, key, { messages: [{ content: `please ${name}` }] });
  const pending = events.find((e) => e.event === 'pending_action');
  if (pending) {
    const { actionId, conversationId } = pending.data as { actionId: string; conversationId: string };
    events = await chat(base, key, { messages: [{ content: 'yes' }], conversationId, confirm: actionId });
  }
  const result = events.find((e) => e.event === 'tool_result');
  expect(result).toBeDefined();
  return result!.data;
}
