import type { ReactNode } from 'react';
import type { Schemas } from '../api/client';
import { DataTable, StatusBadge } from '../components';
import { cellText, recordColumns } from '../logic/taps';

type TestResult = Schemas['TestResultDto'];
type RunResult = Schemas['RunResultDto'];
type Run = Schemas['RunLogEntryDto'];

/** A test run: its records as a table, the counts, the error and the model's diagnosis, the logs. */
export function TestResultView({ result }: { result: TestResult }): ReactNode {
  const records = result.records as unknown[];
  const columns = recordColumns(records, result.columns);
  return (
    <section aria-labelledby="test-title" className="panel" aria-live="polite">
      <h2 id="test-title">Test result</h2>
      <p data-testid="test-summary">
        {result.recordCount} records in {result.durationMs} ms
        {result.recordsTruncated ? `, the first ${records.length} shown` : ''}
        {result.isolation ? ` · sandbox: ${result.isolation}` : ''}
      </p>
      {result.error && (
        <pre className="problem" role="alert">
          {result.error}
        </pre>
      )}
      {result.aiExplanation && (
        <p className="notice">
          <strong>Diagnosis: </strong>
          {result.aiExplanation}
        </p>
      )}
      {records.length > 0 && (
        <div className="table-wrap">
          <table aria-label="Test records">
            <thead>
              <tr>
                {columns.map((c) => (
                  <th key={c} scope="col">
                    {c}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {records.map((r, i) => (
                <tr key={i}>
                  {columns.map((c) => (
                    <td key={c}>{cellText((r as Record<string, unknown>)[c])}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Logs text={result.logs} />
    </section>
  );
}

export function RunResultView({ result }: { result: RunResult }): ReactNode {
  return (
    <section aria-labelledby="run-title" className="panel" aria-live="polite">
      <h2 id="run-title">Run</h2>
      <p data-testid="run-summary">
        <StatusBadge status={result.error ? 'error' : result.status} />{' '}
        {result.persisted
          ? `${result.recordCount} records sent to ${result.targetPipeline}`
          : `nothing loaded (${result.persistedReason ?? 'no reason given'})`}
      </p>
      {result.publisherToken && (
        <p>
          Publisher token <code>{result.publisherToken}</code>: its jobs are on the Overview and in the
          pipeline's status.
        </p>
      )}
      {result.error && (
        <pre className="problem" role="alert">
          {result.error}
        </pre>
      )}
      {result.aiExplanation && (
        <p className="notice">
          <strong>Diagnosis: </strong>
          {result.aiExplanation}
        </p>
      )}
      <Logs text={result.logs} />
    </section>
  );
}

function Logs({ text }: { text: string }): ReactNode {
  return (
    <details open={text !== ''}>
      <summary>Logs{text === '' ? ' (empty)' : ''}</summary>
      <pre className="logs" aria-label="Logs" tabIndex={0}>
        {text}
      </pre>
    </details>
  );
}

/** The last 50 runs (`GET /tap/runs`), newest first: manual and scheduled, runs and tests. */
export function History({ runs }: { runs: Run[] }): ReactNode {
  return (
    <section aria-labelledby="history-title">
      <h2 id="history-title">History</h2>
      {runs.length === 0 ? (
        <p>No runs yet.</p>
      ) : (
        <DataTable
          label="Run history"
          columns={['Started', 'Mode', 'Trigger', 'Status', 'Records', 'Took', 'Detail']}
        >
          {runs.map((r) => (
            <tr key={r.runId}>
              <td>{new Date(r.startedAt).toLocaleString()}</td>
              <td>{r.mode}</td>
              <td>{r.trigger}</td>
              <td>
                <StatusBadge status={r.status} />
              </td>
              <td>{r.recordCount}</td>
              <td>{r.durationMs === null ? '–' : `${r.durationMs} ms`}</td>
              <td>
                {r.error ? (
                  <small className="error-text">{r.error}</small>
                ) : (
                  <small>{r.persistedReason ?? (r.persisted ? 'loaded' : '')}</small>
                )}
              </td>
            </tr>
          ))}
        </DataTable>
      )}
    </section>
  );
}
