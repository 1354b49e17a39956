import { ChatTurn, FeatureModel, ToolCall } from '@tapyard/ai';
import { TapyardError, errorMessage } from '@tapyard/core';
import { AssistantTools, ToolContext } from './assistant-tools';

export type StopReason = 'complete' | 'max_iterations' | 'error' | 'cancelled';

/** Addendum "Assistant": the events and their data. */
export type AgentEvent =
  | { event: 'text'; data: { delta: string } }
  | { event: 'tool_call'; data: { id: string; name: string; arguments: unknown } }
  | {
      event: 'tool_result';
      data: { id: string; name: string; result: unknown } | { id: string; name: string; error: string };
    }
  | { event: 'error'; data: { message: string } }
  | { event: 'done'; data: { iterations: number; stopReason: StopReason } };

/** What the model is given of a tool result at most: larger results are cut (the client gets them whole). */
const RESULT_CHARS = 20_000;

const SYSTEM = `You are Tapyard's assistant in build mode. Tapyard loads data from uploads, object-store drops and
scheduled Python "taps" into PostgreSQL, MongoDB, object stores, sinks and vector stores, checking and transforming
it on the way. Help the user build: look things up with the tools before you answer, propose configurations, and
act through the tools when the user asks you to. Tools run with the user's own permissions: when one is denied,
say so plainly and suggest who could do it; never try to get around it. Keep answers short.`;

/**
 * The build-mode agent loop: the model streams text and asks for tools; each tool call is checked,
 * run and its result given back, for at most `maxIterations` model rounds. Stops as soon as the
 * signal aborts (the client went away): the model call in flight is aborted and no tool runs after.
 */
export async function* agentLoop(
  model: FeatureModel,
  tools: AssistantTools,
  ctx: ToolContext,
  messages: ChatTurn[],
  opts: { maxIterations: number; context: string; attachments: string },
): AsyncGenerator<AgentEvent, { stopReason: StopReason; iterations: number }> {
  const system = `${SYSTEM}${opts.attachments ? `\n\nAttachments of this conversation:\n${opts.attachments}` : ''}${
    opts.context ? `\n\nContext from the client:\n${opts.context}` : ''
  }`;
  const turns = [...messages];
  let iterations = 0;
  while (iterations < opts.maxIterations) {
    iterations++;
    let calls: ToolCall[] = [];
    let text = '';
    try {
      for await (const ev of model.stream({
        system,
        messages: turns,
        tools: tools.specs(),
        signal: ctx.signal,
      })) {
        if (ev.type === 'text') {
          text += ev.delta;
          yield { event: 'text', data: { delta: ev.delta } };
        } else {
          calls = ev.result.toolCalls;
          text = ev.result.text;
        }
      }
    } catch (err) {
      if (ctx.signal.aborted) return { stopReason: 'cancelled', iterations };
      yield { event: 'error', data: { message: errorMessage(err) } };
      yield done(iterations, 'error');
      return { stopReason: 'error', iterations };
    }
    if (calls.length === 0) {
      yield done(iterations, 'complete');
      return { stopReason: 'complete', iterations };
    }
    if (iterations >= opts.maxIterations) break;
    turns.push({ role: 'assistant', content: text, toolCalls: calls });
    for (const call of calls) {
      if (ctx.signal.aborted) return { stopReason: 'cancelled', iterations };
      let args: Record<string, unknown> = {};
      let parseError: string | null = null;
      try {
        const parsed: unknown = JSON.parse(call.arguments || '{}');
        if (parsed && typeof parsed === 'object' && !Array.isArray(parsed))
          args = parsed as Record<string, unknown>;
        else parseError = 'the arguments are not a JSON object';
      } catch {
        parseError = 'the arguments are not valid JSON';
      }
      yield {
        event: 'tool_call',
        data: { id: call.id, name: call.name, arguments: parseError ? call.arguments : args },
      };
      let content: string;
      try {
        if (parseError) throw new Error(parseError);
        const result = await tools.run(ctx, call.name, args);
        yield { event: 'tool_result', data: { id: call.id, name: call.name, result } };
        content = JSON.stringify(result ?? null);
      } catch (err) {
        if (ctx.signal.aborted) return { stopReason: 'cancelled', iterations };
        const message = describe(err);
        yield { event: 'tool_result', data: { id: call.id, name: call.name, error: message } };
        content = JSON.stringify({ error: message });
      }
      turns.push({
        role: 'tool',
        toolCallId: call.id,
        name: call.name,
        content: content.length > RESULT_CHARS ? `${content.slice(0, RESULT_CHARS)} …[cut]` : content,
      });
    }
  }
  yield done(iterations, 'max_iterations');
  return { stopReason: 'max_iterations', iterations };
}

function done(iterations: number, stopReason: StopReason): AgentEvent {
  return { event: 'done', data: { iterations, stopReason } };
}

/** A tool's failure as the model and the client see it: the status and the one-sentence message. */
function describe(err: unknown): string {
  if (err instanceof TapyardError) return `${err.status}: ${err.message}`;
  return `500: the tool failed (${errorMessage(err).slice(0, 200)})`;
}
