import { type FormEvent, type ReactNode, useRef, useState } from 'react';
import { api, problemOf } from '../api/client';
import { Problem, Refused } from '../components';
import { type SseEvent, sseParser } from '../logic/sse';
import { useRefusal } from '../session';
import '../data.css';

/** What the conversation shows: the person's words, the assistant's, and each tool call as it happens. */
type Item =
  | { kind: 'user'; text: string }
  | { kind: 'assistant'; text: string }
  | { kind: 'tool'; id: string; name: string; args: unknown; result?: unknown; error?: string }
  | { kind: 'pending'; actionId: string; name: string; args: unknown; answered?: 'confirm' | 'reject' }
  | { kind: 'end'; text: string };

/** Model rounds per turn: the API's default, sent because the generated type asks for it. */
const MAX_ITERATIONS = 8;

interface Running {
  turnId: string | null;
  abort: AbortController;
}

/**
 * The assistant's chat (docs/assistant.md): `POST /assistant/chat` answers with Server-Sent Events, read
 * from the response body through the typed client (`parseAs: 'stream'`, so the key or CSRF header goes
 * with it as with every call). The server keeps no transcript: each turn sends the conversation so far.
 */
export function Assistant(): ReactNode {
  const refused = useRefusal('assistant:run');
  const [items, setItems] = useState<Item[]>([]);
  const [draft, setDraft] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const [running, setRunning] = useState<Running | null>(null);
  const conversation = useRef<string | null>(null);

  const messages = (list: Item[]): { role: 'user' | 'assistant'; content: string }[] =>
    list.flatMap((i) =>
      i.kind === 'user' || (i.kind === 'assistant' && i.text !== '')
        ? [{ role: i.kind, content: i.text }]
        : [],
    );

  /** Applies one event of the stream to the conversation shown. */
  const apply = (e: SseEvent, run: Running): void => {
    const d = (e.data ?? {}) as Record<string, unknown>;
    switch (e.event) {
      case 'turn':
        run.turnId = String(d.turnId);
        conversation.current = String(d.conversationId);
        setRunning({ ...run });
        return;
      case 'text':
        return setItems((list) => {
          const last = list[list.length - 1];
          return last?.kind === 'assistant'
            ? [...list.slice(0, -1), { ...last, text: last.text + String(d.delta ?? '') }]
            : [...list, { kind: 'assistant', text: String(d.delta ?? '') }];
        });
      case 'tool_call':
        return setItems((list) => [
          ...list,
          { kind: 'tool', id: String(d.id), name: String(d.name), args: d.arguments },
        ]);
      case 'tool_result':
        return setItems((list) =>
          list.map((i) =>
            i.kind === 'tool' && i.id === String(d.id)
              ? { ...i, result: d.result, error: d.error === undefined ? undefined : String(d.error) }
              : i,
          ),
        );
      case 'pending_action':
        return setItems((list) => [
          ...list,
          { kind: 'pending', actionId: String(d.actionId), name: String(d.name), args: d.arguments },
        ]);
      case 'error':
        return setProblem(`The assistant failed: ${String(d.message)}`);
      case 'done':
        return setItems((list) => [...list, { kind: 'end', text: endText(d) }]);
    }
  };

  const send = async (
    list: Item[],
    answer?: { how: 'confirm' | 'reject'; actionId: string },
  ): Promise<void> => {
    setProblem(null);
    const run: Running = { turnId: null, abort: new AbortController() };
    setRunning(run);
    try {
      const { error, response } = await api.POST('/api/v1/assistant/chat', {
        body: {
          messages: messages(list),
          maxIterations: MAX_ITERATIONS,
          ...(conversation.current ? { conversationId: conversation.current } : {}),
          ...(answer ? { [answer.how]: answer.actionId } : {}),
        },
        parseAs: 'stream',
        signal: run.abort.signal,
      });
      // The body is the event stream itself (parseAs: 'stream' leaves it unread).
      if (!response.ok || !response.body) return setProblem(problemOf(error, response));
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      const parser = sseParser();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        for (const event of parser.push(value)) apply(event, run);
      }
    } catch (err) {
      if (!run.abort.signal.aborted) setProblem(`The stream was cut off: ${String(err)}`);
      else setItems((l) => [...l, { kind: 'end', text: 'Cancelled.' }]);
    } finally {
      setRunning(null);
    }
  };

  const submit = (e: FormEvent): void => {
    e.preventDefault();
    const text = draft.trim();
    if (!text || running) return;
    const list: Item[] = [...items, { kind: 'user', text }];
    setItems(list);
    setDraft('');
    void send(list);
  };

  /** Cancel stops the turn on the server (any instance); the stream then ends with `done` `cancelled`. */
  const cancel = async (): Promise<void> => {
    if (!running) return;
    const { response } = running.turnId
      ? await api.POST('/api/v1/assistant/chat/cancel', { body: { turnId: running.turnId } })
      : { response: null };
    // No turn yet, or it ended meanwhile: closing the stream cancels too.
    if (!response?.ok) running.abort.abort();
  };

  const answer = (actionId: string, how: 'confirm' | 'reject'): void => {
    const list = items.map((i) =>
      i.kind === 'pending' && i.actionId === actionId ? { ...i, answered: how } : i,
    );
    setItems(list);
    void send(list, { how, actionId });
  };

  return (
    <section aria-labelledby="chat-title" className="panel chat">
      <h2 id="chat-title">Chat</h2>
      <Refused reason={refused} />
      <ol className="conversation" aria-label="Conversation" aria-live="polite">
        {items.map((item, i) => (
          <li key={i} className={`turn-${item.kind}`}>
            <ItemView item={item} busy={running !== null} answer={answer} />
          </li>
        ))}
      </ol>
      <Problem text={problem} />
      <form onSubmit={submit}>
        <label className="wide">
          Message
          <textarea
            rows={3}
            value={draft}
            onChange={(e) => setDraft(e.target.value)}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) submit(e);
            }}
            disabled={refused !== null}
          />
        </label>
        <div className="row">
          <button type="submit" disabled={refused !== null || running !== null || draft.trim() === ''}>
            Send
          </button>
          <button type="button" onClick={() => void cancel()} disabled={running === null}>
            Cancel
          </button>
          <button
            type="button"
            onClick={() => {
              setItems([]);
              conversation.current = null;
            }}
            disabled={running !== null || items.length === 0}
          >
            New conversation
          </button>
        </div>
      </form>
    </section>
  );
}

function ItemView({
  item,
  busy,
  answer,
}: {
  item: Item;
  busy: boolean;
  answer: (actionId: string, how: 'confirm' | 'reject') => void;
}): ReactNode {
  switch (item.kind) {
    case 'user':
      return (
        <p>
          <strong>You:</strong> {item.text}
        </p>
      );
    case 'assistant':
      return (
        <p data-testid="assistant-text">
          <strong>Assistant:</strong> {item.text}
        </p>
      );
    case 'tool':
      return (
        <details className="tool-call">
          <summary>
            Tool <code>{item.name}</code>{' '}
            {item.error ? 'refused or failed' : item.result === undefined ? 'running…' : 'done'}
          </summary>
          <p className="hint">Arguments</p>
          <pre>{JSON.stringify(item.args, null, 2)}</pre>
          {item.error && <p className="problem">{item.error}</p>}
          {item.result !== undefined && (
            <>
              <p className="hint">Result</p>
              <pre>{JSON.stringify(item.result, null, 2)}</pre>
            </>
          )}
        </details>
      );
    case 'pending':
      return (
        <div className="pending-action">
          <p>
            The assistant asks to run <code>{item.name}</code>:
          </p>
          <pre>{JSON.stringify(item.args, null, 2)}</pre>
          {item.answered ? (
            <p>{item.answered === 'confirm' ? 'Confirmed.' : 'Rejected.'}</p>
          ) : (
            <div className="row">
              <button type="button" disabled={busy} onClick={() => answer(item.actionId, 'confirm')}>
                Confirm {item.name}
              </button>
              <button type="button" disabled={busy} onClick={() => answer(item.actionId, 'reject')}>
                Reject {item.name}
              </button>
            </div>
          )}
        </div>
      );
    case 'end':
      return <p className="hint">{item.text}</p>;
  }
}

function endText(d: Record<string, unknown>): string {
  switch (d.stopReason) {
    case 'cancelled':
      return 'Cancelled.';
    case 'max_iterations':
      return 'Stopped: the most model rounds were used.';
    case 'error':
      return 'Stopped by an error.';
    default:
      return d.awaitingConfirmation ? 'Waiting for your answer.' : 'Done.';
  }
}
