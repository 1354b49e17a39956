import { TapType } from '@tapyard/taps';
import { PromptFragment } from './prompt-fragments/prompt-fragment';

/** Variables the platform always gives a script (spec rule 3): never asked of the user. */
export const INJECTED_VARS = [
  'SERVICE_POSTGRES_DATABASE',
  'SERVICE_MONGODB_DATABASE',
  'SERVICE_PLATFORM_HOST',
  'SERVICE_PLATFORM_PORT',
] as const;
/** Also the platform's, never the user's to set. */
export const PLATFORM_VARS = new Set<string>([
  ...INJECTED_VARS,
  'SERVICE_PLATFORM_API_KEY',
  'SERVICE_TAP_TEST_LIMIT',
]);

const SCRIPT_RULES = `A Tapyard tap is one Python 3.11 file that defines a top-level \`def fetch():\` taking no arguments (or
\`def fetch(state):\` for incremental loading, below) and yielding (or returning a list of) records. The platform
runs it in a sandbox and loads what it yields.
Rules every script follows:
- Read every credential and setting from environment variables with os.environ / os.getenv. Never write a
  credential's value in the code.
- Read SERVICE_TAP_TEST_LIMIT: \`limit = int(os.environ.get("SERVICE_TAP_TEST_LIMIT", "0") or 0)\`; when it is
  greater than 0, stop after that many records (tests use it).
- The platform always sets ${INJECTED_VARS.join(', ')} (and SERVICE_PLATFORM_API_KEY when API keys are on); use
  them, never ask for them.
- Import only the standard library and the packages you list in \`packages\` (pip requirement specifiers such as
  "requests==2.32.3"). No exec, eval or __import__.
- HTTP calls: a timeout on every request, \`raise_for_status()\` (or an explicit check that raises), retries with
  exponential back-off on 429 and 5xx that honour Retry-After, and pagination until the source says it is done.
- Log progress and problems with print() or logging: the logs come back to the user.
- Incremental loading (when the source can filter by a cursor such as updated_at or an increasing id): declare
  \`def fetch(state):\`. \`state\` is a dict holding the bookmark the last successful load committed (\`{}\` on the
  first run): read the cursor with a default (\`since = state.get("updated_since", "1970-01-01T00:00:00Z")\`), ask the
  source only for newer records, and update the dict as records are yielded (\`state["updated_since"] = row["updated_at"]\`).
  Change the dict in place, never rebind the name; keep only small JSON values in it (a cursor, not data). The platform
  commits the new state only after the records loaded, so a failed run or load starts again from the old bookmark.`;

const STRUCTURED_RULES = `Structured taps yield flat dict rows (one per record) with consistent keys; nested values may be dicts or lists.`;

const DOCUMENT_RULES = `Document taps yield one record per document, exactly {"uri": str, "filename": str, "content": str} where content
is the document's bytes base64-encoded (text documents may be plain text). A document tap only fetches
documents: it never chunks, embeds, or writes to a vector store (the platform does all three), and it never
falls back to reading the local filesystem; it reads only the source the user described.`;

export function scriptRules(tapType: TapType): string {
  return `${SCRIPT_RULES}\n\n${tapType === 'document' ? DOCUMENT_RULES : STRUCTURED_RULES}`;
}

/** The matched fragments, as the organisation's own instructions. */
export function fragmentsSection(fragments: readonly PromptFragment[]): string {
  if (fragments.length === 0) return '';
  return (
    '\n\nInstructions from this organisation (follow them; they win over general habits):\n' +
    fragments.map((f) => `### ${f.key}\n${f.content.trim()}`).join('\n\n')
  );
}

export function secretSection(secretName: string | null, fields: readonly string[]): string {
  if (!secretName) return '\nThe tap has no secret: it needs no credentials, or reads public data.';
  return (
    `\nThe tap's secret '${secretName}' gives the script these environment variables: ${fields.join(', ') || '(none)'}. ` +
    'Read credentials from them; their values are not shown to you.'
  );
}

export function brainstormSystem(tapType: TapType): string {
  const focus =
    tapType === 'document'
      ? 'The tap fetches documents (files, pages, attachments). Ask about where the documents live, how to reach ' +
        'and authenticate to that source, which documents to take, and how to tell new or changed ones. Never ask ' +
        'about chunking, embedding, models or vector stores: the platform decides those.'
      : 'The tap fetches structured records. Ask about the source system, authentication, which objects and fields, ' +
        'filters, incremental loading (a cursor such as updated_at), volumes and rate limits.';
  return (
    'You help a user describe a Tapyard tap, a small Python script that fetches data on a schedule. ' +
    `${focus}\nAsk at most three short questions per reply. Keep \`description\` a complete, precise specification ` +
    'of the tap so far (source, auth, objects, fields, filters, pagination, incremental state), written so a ' +
    'developer could implement it. In `suggestedEnvVars` list the environment variables the script will need for ' +
    `settings and credentials (UPPER_SNAKE_CASE); never the ones the platform provides (${INJECTED_VARS.join(', ')}).\n` +
    'Answer with one JSON object: {"reply": string, "description": string, "suggestedEnvVars": [string]}.'
  );
}

export const SCRIPT_ANSWER = 'Answer with one JSON object: {"script": string, "packages": [string]}.';
export const CHANGES_ANSWER =
  'Answer with one JSON object: {"script": string, "packages": [string], "changes": [string]} where `changes` lists ' +
  'each change in one sentence; when nothing should change, return the script unchanged and `changes` empty.';

export const SCRIPT_SCHEMA = {
  type: 'object',
  required: ['script', 'packages'],
  properties: {
    script: { type: 'string', minLength: 1 },
    packages: { type: 'array', items: { type: 'string' } },
  },
};
export const CHANGES_SCHEMA = {
  type: 'object',
  required: ['script', 'packages', 'changes'],
  properties: {
    script: { type: 'string', minLength: 1 },
    packages: { type: 'array', items: { type: 'string' } },
    changes: { type: 'array', items: { type: 'string' } },
  },
};
export const BRAINSTORM_SCHEMA = {
  type: 'object',
  required: ['reply', 'description', 'suggestedEnvVars'],
  properties: {
    reply: { type: 'string' },
    description: { type: 'string' },
    suggestedEnvVars: { type: 'array', items: { type: 'string' } },
  },
};
export const CRON_SCHEMA = {
  type: 'object',
  required: ['cronExpression', 'explanation'],
  properties: { cronExpression: { type: 'string' }, explanation: { type: 'string' } },
};
export const EXPLANATION_SCHEMA = {
  type: 'object',
  required: ['explanation'],
  properties: { explanation: { type: 'string' } },
};
