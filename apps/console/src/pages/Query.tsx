import { type FormEvent, type ReactNode, useEffect, useState } from 'react';
import { api, problemOf, type Schemas } from '../api/client';
import { DataTable, Problem, Refused } from '../components';
import { toCsv } from '../logic/csv';
import { useRefusal } from '../session';
import '../data.css';

type Answer = Schemas['NlQueryResultDto'];

/**
 * Natural-language SQL in two steps: the question is first sent with `execute: false`, so the person
 * reads the statement and its explanation before anything runs; Run sends that very statement back
 * (`sql`), which the API checks as it checks a written one and runs without asking the model again.
 */
export function Query(): ReactNode {
  const refused = useRefusal('search:query');
  const [question, setQuestion] = useState('');
  const [schema, setSchema] = useState('');
  const [maxRows, setMaxRows] = useState(100);
  const [proposal, setProposal] = useState<Answer | null>(null);
  const [result, setResult] = useState<Answer | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState<'proposing' | 'running' | null>(null);
  const [download, setDownload] = useState<string | null>(null);

  const ask = async (execute: boolean, sql?: string): Promise<Answer | null> => {
    setProblem(null);
    const { data, error, response } = await api.POST('/api/v1/query/postgres', {
      body: {
        question,
        execute,
        maxRows,
        ...(sql === undefined ? {} : { sql }),
        ...(schema.trim() ? { schema: schema.trim() } : {}),
      },
    });
    if (!data) setProblem(problemOf(error, response));
    return data ?? null;
  };

  const propose = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    setBusy('proposing');
    setResult(null);
    setProposal(await ask(false));
    setBusy(null);
  };

  const run = async (sql: string): Promise<void> => {
    setBusy('running');
    setResult(await ask(true, sql));
    setBusy(null);
  };

  // The CSV is made in the browser from the rows shown: a Blob URL, released when replaced or left.
  useEffect(() => {
    if (!result) return setDownload(null);
    const url = URL.createObjectURL(
      new Blob([toCsv(result.columns, result.rows as unknown[][])], { type: 'text/csv' }),
    );
    setDownload(url);
    return () => URL.revokeObjectURL(url);
  }, [result]);

  return (
    <>
      <section aria-labelledby="ask-title" className="panel">
        <h2 id="ask-title">Ask a question</h2>
        <Refused reason={refused} />
        <form onSubmit={propose}>
          <label className="wide">
            Question
            <textarea
              rows={2}
              value={question}
              onChange={(e) => {
                setQuestion(e.target.value);
                setProposal(null);
                setResult(null);
              }}
              required
            />
          </label>
          <div className="row">
            <label>
              Schema
              <input value={schema} onChange={(e) => setSchema(e.target.value)} placeholder="public" />
            </label>
            <label>
              Most rows
              <input
                type="number"
                min={1}
                max={10000}
                value={maxRows}
                onChange={(e) => setMaxRows(Number(e.target.value))}
              />
            </label>
          </div>
          <button type="submit" disabled={refused !== null || busy !== null}>
            {busy === 'proposing' ? 'Writing the SQL…' : 'Show the SQL'}
          </button>
        </form>
        <Problem text={problem} />
      </section>
      {proposal && (
        <section aria-labelledby="sql-title" className="panel">
          <h2 id="sql-title">Proposed SQL</h2>
          <pre className="sql" data-testid="proposed-sql">
            {proposal.sql}
          </pre>
          <p>{proposal.explanation}</p>
          <p className="hint">
            Nothing has run yet. Only one read-only statement over the tables of the schema can run, checked
            by the platform.
          </p>
          <button type="button" onClick={() => run(proposal.sql)} disabled={busy !== null}>
            {busy === 'running' ? 'Running…' : 'Run it'}
          </button>
        </section>
      )}
      {result && (
        <section aria-labelledby="result-title" className="panel">
          <h2 id="result-title">Result</h2>
          <p>
            {result.rowCount} row{result.rowCount === 1 ? '' : 's'}
            {result.truncated ? ' (truncated: more rows than asked for, or over the size cap)' : ''}.{' '}
            {download && (
              <a href={download} download="query.csv">
                Download CSV
              </a>
            )}
          </p>
          <DataTable label="Query result" columns={result.columns}>
            {(result.rows as unknown[][]).map((row, i) => (
              <tr key={i}>
                {row.map((v, j) => (
                  <td key={j}>
                    {v === null ? <em>null</em> : typeof v === 'object' ? JSON.stringify(v) : String(v)}
                  </td>
                ))}
              </tr>
            ))}
          </DataTable>
        </section>
      )}
    </>
  );
}
