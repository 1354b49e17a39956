import { type FormEvent, type ReactNode, useState } from 'react';
import { api, problemOf, type Schemas } from '../api/client';
import { Problem, Refused } from '../components';
import { useRefusal } from '../session';

/**
 * Cron from English (`POST /tap/cron`): the Quartz expression, what it means and its next five fire times,
 * then "Use this schedule" copies it into the tap's form (saved with the tap).
 */
export function CronFromEnglish({
  timezone,
  use,
  disabled,
}: {
  timezone: string;
  use: (cronExpression: string) => void;
  disabled: boolean;
}): ReactNode {
  const refused = useRefusal('tap:read');
  const [description, setDescription] = useState('');
  const [answer, setAnswer] = useState<Schemas['CronResultDto'] | null>(null);
  const [problem, setProblem] = useState<string | null>(null);

  const submit = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    setProblem(null);
    setAnswer(null);
    const { data, error, response } = await api.POST('/api/v1/tap/cron', {
      body: { description, timezone: timezone || 'UTC' },
    });
    if (!data) return setProblem(problemOf(error, response));
    setAnswer(data);
  };

  return (
    <div className="cron-english">
      <form onSubmit={submit} aria-label="Cron from English">
        <label>
          Schedule in English
          <input
            value={description}
            onChange={(e) => setDescription(e.target.value)}
            placeholder="every weekday at 7am"
            required
            disabled={refused !== null}
          />
        </label>
        <button type="submit" disabled={refused !== null}>
          Translate
        </button>
      </form>
      <Refused reason={refused} />
      <Problem text={problem} />
      {answer && (
        <div className="cron-answer" aria-live="polite">
          <p>
            <code data-testid="cron-expression">{answer.cronExpression}</code> {answer.explanation}
          </p>
          <p>Next five fire times ({timezone || 'UTC'}):</p>
          <ol aria-label="Next fire times">
            {answer.nextRuns.map((t) => (
              <li key={t}>
                <time dateTime={t}>{t}</time>
              </li>
            ))}
          </ol>
          <button type="button" onClick={() => use(answer.cronExpression)} disabled={disabled}>
            Use this schedule
          </button>
        </div>
      )}
    </div>
  );
}
