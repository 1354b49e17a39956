import { ModuleRef } from '@nestjs/core';
import { ScopeFields, ScopeTarget } from '@tapyard/auth';
import { PipelineDefinition, PipelineErrorCode } from '@tapyard/model';
import type { DomainCode } from '@tapyard/core';
import { PipelinesService, pipelineBodyScope, pipelineScope } from '@tapyard/pipelines';
import { TapErrorCode, TapsRepository, tapScope } from '@tapyard/taps';
import { IncidentErrorCode, IncidentsService } from '@tapyard/incidents';
import { TapyardRequest } from '../http/request-context';
import { ScopeResolver } from './access-rule';

/** The fields scopes check on a pipeline and on everything under it (its jobs and their status). */
export function pipelineFields(
  def: Pick<PipelineDefinition, 'catalog' | 'destination' | 'source'>,
): ScopeFields {
  return pipelineScope(def);
}

const text = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v.trim() : null);

async function existing(
  refs: ModuleRef,
  environment: string,
  name: string,
  hiddenMessage = `pipeline '${name}' does not exist`,
  hiddenCode: DomainCode = PipelineErrorCode.NotFound,
): Promise<ScopeTarget[]> {
  // An absent pipeline has nothing to hide: the handler answers its own 404. An outage throws (deny).
  const found = await refs.get(PipelinesService, { strict: false }).find(environment, name);
  return found ? [{ fields: pipelineFields(found.definition), hiddenMessage, hiddenCode }] : [];
}

/** The pipeline named by a query parameter (GET/DELETE /pipeline?pipeline=). */
export function pipelineInQuery(param: string): ScopeResolver {
  return async (req: TapyardRequest, refs: ModuleRef) => {
    const name = text(req.query[param]);
    return name ? existing(refs, req.environment, name) : [];
  };
}

/**
 * POST /pipeline: the scope the body will be stored with (its catalog, database and stored type),
 * and, when it exists, the scope it has now; moving a pipeline between scopes needs the capability in both.
 */
export const pipelineInBody: ScopeResolver = async (req, refs) => {
  const body = (req.body ?? {}) as Record<string, unknown>;
  const name = text(body.name);
  const incoming: ScopeTarget = {
    fields: pipelineBodyScope(body),
    hiddenMessage: `pipeline '${name ?? ''}' cannot be saved in that catalog`,
  };
  return [...(name ? await existing(refs, req.environment, name) : []), incoming];
};

/**
 * GET /pipeline/status: a pipeline name query is about that pipeline, which must be visible; token
 * queries have no target here, the handler keeps only the jobs the caller may see.
 */
export const statusQuery: ScopeResolver = async (req, refs) => {
  const q = req.query;
  if (text(q.publishertoken) || text(q.pipelinetoken)) return [];
  const name = text(q.pipelinename);
  return name ? existing(refs, req.environment, name) : [];
};

/** The fields scopes check on a tap: its catalog and its type. */
export function tapFields(tap: { catalog?: string | null; tapType?: string | null }): ScopeFields {
  return tapScope(tap);
}

async function existingTap(refs: ModuleRef, environment: string, name: string): Promise<ScopeTarget[]> {
  const found = await refs.get(TapsRepository, { strict: false }).find(environment, name);
  return found
    ? [
        {
          fields: tapFields(found),
          hiddenMessage: `tap '${name}' does not exist`,
          hiddenCode: TapErrorCode.NotFound,
        },
      ]
    : [];
}

/** The tap named by a query parameter (GET/DELETE /tap?name=, /tap/runs, /tap/ledger). */
export function tapInQuery(param: string): ScopeResolver {
  return async (req: TapyardRequest, refs: ModuleRef) => {
    const name = text(req.query[param]);
    return name ? existingTap(refs, req.environment, name) : [];
  };
}

/**
 * POST /tap, /tap/test, /tap/run: the stored tap named in the body and, for a configuration body,
 * the catalog it puts the tap in (moving a tap between catalogs needs both).
 */
export const tapInBody: ScopeResolver = async (req, refs) => {
  const body = (req.body ?? {}) as Record<string, unknown>;
  const name = text(body.name);
  const stored = name ? await existingTap(refs, req.environment, name) : [];
  if (!('catalog' in body) && !('tapType' in body) && stored.length > 0) return stored;
  const incoming: ScopeTarget = {
    fields: tapFields({ catalog: text(body.catalog), tapType: text(body.tapType) }),
    hiddenMessage: `tap '${name ?? ''}' cannot be saved in that catalog`,
  };
  return [...stored, incoming];
};

/**
 * The AI authoring routes (generate, fix, review, optimise): the tap named by `tapName`, stored or
 * about to be (an unsaved tap is checked as uncataloged, of the body's tapType).
 */
export const tapNamedInBody: ScopeResolver = async (req, refs) => {
  const body = (req.body ?? {}) as Record<string, unknown>;
  const name = text(body.tapName);
  const stored = name ? await existingTap(refs, req.environment, name) : [];
  if (stored.length > 0) return stored;
  return [
    {
      fields: tapFields({ catalog: null, tapType: text(body.tapType) }),
      hiddenMessage: `tap '${name ?? ''}' does not exist`,
      hiddenCode: TapErrorCode.NotFound,
    },
  ];
};

/** Routes under /pipelines/{name}/…: the pipeline named in the path. */
export function pipelineInPath(param: string): ScopeResolver {
  return async (req: TapyardRequest, refs: ModuleRef) => {
    const name = text((req.params as Record<string, unknown> | undefined)?.[param]);
    return name ? existing(refs, req.environment, name) : [];
  };
}

/**
 * /incidents/{id}/…: the pipeline the incident is about. A tap's incident is checked by the service
 * against the tap's scope (`tap:` capabilities), which this route capability does not name.
 */
export function incidentInPath(param: string): ScopeResolver {
  return async (req: TapyardRequest, refs: ModuleRef) => {
    const id = text((req.params as Record<string, unknown> | undefined)?.[param]);
    if (!id) return [];
    const subject = await refs.get(IncidentsService, { strict: false }).subjectOf(req.environment, id);
    // The incident's own 404 names the id; an existing one is as visible as its pipeline.
    return subject?.subject === 'pipeline'
      ? existing(
          refs,
          req.environment,
          subject.name,
          `incident '${id}' does not exist`,
          IncidentErrorCode.NotFound,
        )
      : [];
  };
}
