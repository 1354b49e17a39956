import { MigrationInterface, QueryRunner } from 'typeorm';
import { RecordEvents1765084800000 } from './1765084800000-record-events';

const ARGS = `text[], text[], text[], text[], text[], text[], text[], text[], text[], bigint[], text[], boolean[], bigint[], bigint[]`;

/**
 * `record_events` with written-once events (`p_once`): such an event is skipped when its job already
 * has the same process, state and time, written before or earlier in the same call. A small upload's
 * intake entries (StreamNotifier begin and end) are written by the API while its job is already
 * queued, and carried in the job: the job's first write includes them, so whichever write comes
 * first puts them ahead of the job's own entries, and the other adds nothing (under the job's lock,
 * so the two never both write them). Otherwise as migration 1765084800000, whose 14-argument form
 * stays, now calling this one: hosts of the previous version keep writing during a rolling upgrade.
 */
export class RecordEventsOnce1765776000000 implements MigrationInterface {
  name = 'RecordEventsOnce1765776000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE FUNCTION "tapyard"."record_events"(
    p_lock_keys text[], p_environment text[], p_pipeline text[], p_pipeline_token text[], p_publisher_token text[],
    p_filename text[], p_process_name text[], p_state text[], p_description text[], p_epoch bigint[], p_status text[],
    p_terminal boolean[], p_rows_loaded bigint[], p_rows_rejected bigint[], p_once boolean[]) RETURNS void
  LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
  k text;
BEGIN
  FOREACH k IN ARRAY p_lock_keys LOOP
    PERFORM pg_advisory_xact_lock(1415137858, hashtext(k));
  END LOOP;
  WITH ev AS (
    SELECT * FROM unnest(p_environment, p_pipeline, p_pipeline_token, p_publisher_token, p_filename, p_process_name,
        p_state, p_description, p_epoch, p_status, p_terminal, p_rows_loaded, p_rows_rejected, p_once) WITH ORDINALITY
      AS ev (environment, pipeline, pipeline_token, publisher_token, filename, process_name, state, description,
        epoch, status, terminal, rows_loaded, rows_rejected, once, ord)
  ), open AS (
    SELECT e.* FROM ev e
    WHERE NOT EXISTS (SELECT 1 FROM tapyard.jobs j
        WHERE j.environment = e.environment AND j.pipeline_token = e.pipeline_token AND j.ended_at IS NOT NULL)
      AND NOT EXISTS (SELECT 1 FROM ev t
        WHERE t.environment = e.environment AND t.pipeline_token = e.pipeline_token AND t.terminal AND t.ord < e.ord)
      AND NOT (e.once AND (
        EXISTS (SELECT 1 FROM tapyard.status_events s
          WHERE s.environment = e.environment AND s.pipeline_token = e.pipeline_token
            AND s.process_name = e.process_name AND s.state = e.state AND s.epoch = e.epoch)
        OR EXISTS (SELECT 1 FROM ev d
          WHERE d.once AND d.ord < e.ord AND d.environment = e.environment AND d.pipeline_token = e.pipeline_token
            AND d.process_name = e.process_name AND d.state = e.state AND d.epoch = e.epoch)))
  ), written AS (
    INSERT INTO tapyard.status_events
      (environment, pipeline, pipeline_token, publisher_token, filename, process_name, state, description, epoch)
    SELECT o.environment, o.pipeline, o.pipeline_token, o.publisher_token, o.filename, o.process_name, o.state,
      o.description, o.epoch
    FROM open o ORDER BY o.ord
  ), folded AS (
    SELECT o.environment, o.pipeline_token, min(o.ord) AS first, max(o.ord) AS last, max(o.epoch) AS latest,
      (array_agg(o.process_name ORDER BY o.ord DESC) FILTER (WHERE o.state = 'error'))[1] AS error_process,
      (array_agg(o.description ORDER BY o.ord DESC) FILTER (WHERE o.state = 'error'))[1] AS error_description,
      (array_agg(o.rows_loaded ORDER BY o.ord DESC) FILTER (WHERE o.rows_loaded IS NOT NULL))[1] AS rows_loaded,
      (array_agg(o.rows_rejected ORDER BY o.ord DESC) FILTER (WHERE o.rows_rejected IS NOT NULL))[1] AS rows_rejected
    FROM open o GROUP BY o.environment, o.pipeline_token
  )
  INSERT INTO tapyard.jobs AS j (environment, pipeline_token, pipeline, publisher_token, filename, status,
    last_process, last_state, started_at, last_event_at, ended_at, last_error_process, last_error_description,
    scope, rows_loaded, rows_rejected)
  SELECT f.environment, f.pipeline_token, l.pipeline, l.publisher_token, l.filename, l.status,
    l.process_name, l.state, s.epoch, f.latest, CASE WHEN l.terminal THEN l.epoch END,
    f.error_process, f.error_description,
    (SELECT jsonb_build_object('catalog', p.catalog,
        'database', p.definition->'destination'->'database'->>'dbName',
        'type', p.definition->'source'->'fileAttributes'->>'format')
      FROM tapyard.pipelines p WHERE p.environment = l.environment AND p.name = l.pipeline),
    f.rows_loaded, f.rows_rejected
  FROM folded f JOIN open l ON l.ord = f.last JOIN open s ON s.ord = f.first
  ON CONFLICT (environment, pipeline_token) DO UPDATE SET
    status = EXCLUDED.status,
    last_process = EXCLUDED.last_process,
    last_state = EXCLUDED.last_state,
    last_event_at = GREATEST(j.last_event_at, EXCLUDED.last_event_at),
    ended_at = EXCLUDED.ended_at,
    last_error_process = COALESCE(EXCLUDED.last_error_process, j.last_error_process),
    last_error_description = COALESCE(EXCLUDED.last_error_description, j.last_error_description),
    rows_loaded = COALESCE(EXCLUDED.rows_loaded, j.rows_loaded),
    rows_rejected = COALESCE(EXCLUDED.rows_rejected, j.rows_rejected);
END
$fn$`);
    await q.query(`REVOKE ALL ON FUNCTION "tapyard"."record_events"(${ARGS}, boolean[]) FROM PUBLIC`);
    await q.query(`CREATE OR REPLACE FUNCTION "tapyard"."record_events"(
    p_lock_keys text[], p_environment text[], p_pipeline text[], p_pipeline_token text[], p_publisher_token text[],
    p_filename text[], p_process_name text[], p_state text[], p_description text[], p_epoch bigint[], p_status text[],
    p_terminal boolean[], p_rows_loaded bigint[], p_rows_rejected bigint[]) RETURNS void
  LANGUAGE sql AS $fn$
  SELECT "tapyard"."record_events"(p_lock_keys, p_environment, p_pipeline, p_pipeline_token, p_publisher_token,
    p_filename, p_process_name, p_state, p_description, p_epoch, p_status, p_terminal, p_rows_loaded,
    p_rows_rejected, array_fill(false, ARRAY[coalesce(cardinality(p_environment), 0)]))
$fn$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION "tapyard"."record_events"(${ARGS})`);
    await q.query(`DROP FUNCTION "tapyard"."record_events"(${ARGS}, boolean[])`);
    await new RecordEvents1765084800000().up(q);
  }
}
