import { type FormEvent, type ReactNode, Suspense, lazy, useState } from 'react';
import { api, problemOf, type Schemas } from '../api/client';
import { Problem, Refused } from '../components';
import {
  type Outcome,
  type ReviewFacts,
  type RewriteAnswer,
  type TestFacts,
  fixBlocked,
  optimiseBlocked,
  outcomeOf,
  reviewBlocked,
} from '../logic/tap-authoring-flow';
import { useRefusal } from '../session';

// Fetched (with the diff library) only once a rewrite comes back.
const DiffView = lazy(() => import('../components/DiffView').then((m) => ({ default: m.DiffView })));

type Action = 'generate' | 'fix' | 'review' | 'optimize';

const TITLES: Record<Action, string> = {
  generate: 'Generated script',
  fix: 'Fixed script',
  review: 'Reviewed script',
  optimize: 'Optimised script',
};

interface Proposal {
  action: Action;
  before: string;
  answer: RewriteAnswer & { packages: string[] };
  outcome: Outcome;
}

interface Props {
  tapName: string;
  tapType: 'structured' | 'document';
  secretName: string | null;
  description: string;
  useDescription: (description: string) => void;
  script: string;
  scriptPath: string | null;
  lastTest: TestFacts | null;
  lastReview: ReviewFacts | null;
  reviewed: (facts: ReviewFacts) => void;
  /** Saves the tap with a stored version; true once saved. */
  adopt: (version: { scriptPath: string; packages: string[] }) => Promise<boolean>;
}

/**
 * Brainstorm, generate, fix, review and optimise through the API's AI routes. Each rewrite comes back as a
 * stored version the tap does not use yet: the page shows its diff against the editor's script, and only
 * "Save this version" points the tap at it. The order is the spec's rule 5 (logic/tap-authoring-flow.ts).
 */
export function TapAi(props: Props): ReactNode {
  const updateRefused = useRefusal('tap:update');
  const runRefused = useRefusal('tap:run');
  const [proposal, setProposal] = useState<Proposal | null>(null);
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState<string | null>(null);

  const flow = { script: props.script, lastTest: props.lastTest, lastReview: props.lastReview };
  const named = props.tapName === '' ? 'Name the tap first.' : null;
  const generateBlocked = named ?? (props.description.trim() === '' ? 'Write a description first.' : null);
  const fixWhy = named ?? fixBlocked(flow);
  const reviewWhy = named ?? reviewBlocked(flow);
  const optimiseWhy = named ?? optimiseBlocked(flow);

  const ask = async (action: Action): Promise<void> => {
    setProblem(null);
    setOutcome(null);
    setProposal(null);
    setBusy(`Asking the model (${action})…`);
    const before = props.script;
    const base = { tapName: props.tapName, ...(props.scriptPath ? { oldScriptPath: props.scriptPath } : {}) };
    const test = props.lastTest;
    // Review and optimise are offered only after a test of this very script (reviewBlocked).
    const facts = {
      script: before,
      recordCount: test?.recordCount ?? 0,
      durationMs: test?.durationMs ?? 0,
      logs: test?.logs ?? '',
    };
    const call =
      action === 'generate'
        ? api.POST('/api/v1/tap/generate', {
            body: {
              ...base,
              description: props.description,
              tapType: props.tapType,
              ...(props.secretName ? { secretName: props.secretName } : {}),
            },
          })
        : action === 'fix'
          ? api.POST('/api/v1/tap/fix', {
              body: {
                ...base,
                script: before,
                error: test?.error ?? '',
                logs: test?.logs ?? '',
                ...(test?.aiExplanation ? { diagnosis: test.aiExplanation } : {}),
              },
            })
          : action === 'review'
            ? api.POST('/api/v1/tap/review', { body: { ...base, ...facts } })
            : api.POST('/api/v1/tap/optimize', {
                // The regression guard on the server: both versions re-tested, the slower rewrite reverted.
                body: { ...base, ...facts, verify: true, testLimit: 20 },
              });
    const { data, error, response } = await call;
    setBusy(null);
    if (!data) return setProblem(problemOf(error, response));
    const answer = data as RewriteAnswer & { packages: string[] };
    if (action === 'review') props.reviewed({ script: before, rewritten: answer.rewritten === true });
    const result = outcomeOf(action, before, answer);
    if (result.kind === 'proposal') setProposal({ action, before, answer, outcome: result });
    else setOutcome(result);
  };

  const save = async (): Promise<void> => {
    if (!proposal) return;
    const saved = await props.adopt({
      scriptPath: proposal.answer.scriptPath,
      packages: proposal.answer.packages,
    });
    if (saved) setProposal(null);
  };

  const button = (action: Action, label: string, why: string | null): ReactNode => (
    <div className="ai-action">
      <button
        type="button"
        onClick={() => void ask(action)}
        disabled={updateRefused !== null || why !== null || busy !== null}
      >
        {label}
      </button>
      {!updateRefused && why && <small>{why}</small>}
    </div>
  );

  return (
    <section aria-labelledby="ai-title" className="panel">
      <h2 id="ai-title">AI authoring</h2>
      <Brainstorm tapType={props.tapType} description={props.description} use={props.useDescription} />
      <Refused reason={updateRefused} />
      <div className="ai-actions">
        {button('generate', 'Generate from the description', generateBlocked)}
        {button('fix', 'Fix with AI', fixWhy)}
        {button('review', 'Review', reviewWhy)}
        {runRefused && !updateRefused ? (
          <div className="ai-action">
            <button type="button" disabled>
              Optimise
            </button>
            <small>{runRefused} Optimise re-tests both versions (the regression guard).</small>
          </div>
        ) : (
          button('optimize', 'Optimise', optimiseWhy)
        )}
      </div>
      {busy && <p role="status">{busy}</p>}
      <Problem text={problem} />
      {outcome && (
        <p
          className={outcome.kind === 'reverted' ? 'refused' : 'notice'}
          role="status"
          data-testid="ai-outcome"
        >
          {outcome.note}
        </p>
      )}
      {proposal && (
        <div className="proposal" aria-live="polite">
          <p className="notice" role="status" data-testid="ai-outcome">
            {proposal.outcome.note}
          </p>
          {(proposal.answer.changes ?? []).length > 0 && (
            <ul aria-label="Changes">
              {(proposal.answer.changes ?? []).map((c) => (
                <li key={c}>{c}</li>
              ))}
            </ul>
          )}
          <Suspense fallback={<p>Loading the diff…</p>}>
            <DiffView
              before={proposal.before}
              after={proposal.answer.script}
              label={TITLES[proposal.action]}
            />
          </Suspense>
          <div className="actions">
            <button type="button" onClick={() => void save()} disabled={updateRefused !== null}>
              Save this version
            </button>
            <button type="button" onClick={() => setProposal(null)}>
              Discard
            </button>
          </div>
        </div>
      )}
    </section>
  );
}

type Message = Schemas['ChatMessageDto'];

/** Talk the tap through with the model (`POST /tap/brainstorm`): its reply and the description so far. */
function Brainstorm({
  tapType,
  description,
  use,
}: {
  tapType: 'structured' | 'document';
  description: string;
  use: (description: string) => void;
}): ReactNode {
  const refused = useRefusal('tap:update');
  const [messages, setMessages] = useState<Message[]>([]);
  const [text, setText] = useState('');
  const [answer, setAnswer] = useState<Schemas['BrainstormResultDto'] | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const send = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    setProblem(null);
    const next: Message[] = [...messages, { role: 'user', content: text }];
    setBusy(true);
    const { data, error, response } = await api.POST('/api/v1/tap/brainstorm', {
      body: { messages: next, tapType, ...(description ? { currentDescription: description } : {}) },
    });
    setBusy(false);
    if (!data) return setProblem(problemOf(error, response));
    setMessages([...next, { role: 'assistant', content: data.reply }]);
    setAnswer(data);
    setText('');
  };

  return (
    <details className="brainstorm" open={messages.length > 0}>
      <summary>Brainstorm the tap with the model</summary>
      {messages.length > 0 && (
        <ol className="chat" aria-label="Conversation">
          {messages.map((m, i) => (
            <li key={i} className={`chat-${m.role}`}>
              <strong>{m.role === 'user' ? 'You' : 'Model'}:</strong> {m.content}
            </li>
          ))}
        </ol>
      )}
      <form onSubmit={send} aria-label="Brainstorm">
        <label>
          Message
          <textarea
            value={text}
            onChange={(e) => setText(e.target.value)}
            rows={2}
            required
            disabled={!!refused}
          />
        </label>
        <button type="submit" disabled={!!refused || busy}>
          {busy ? 'Waiting…' : 'Send'}
        </button>
      </form>
      <Refused reason={refused} />
      <Problem text={problem} />
      {answer && (
        <div className="brainstorm-answer">
          <p>
            <strong>Description so far:</strong> {answer.description}
          </p>
          {answer.suggestedEnvVars.length > 0 && (
            <p>
              Variables its secret should hold: <code>{answer.suggestedEnvVars.join(', ')}</code>
            </p>
          )}
          <button type="button" onClick={() => use(answer.description)}>
            Use this description
          </button>
        </div>
      )}
    </details>
  );
}
