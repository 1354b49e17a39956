import { BadRequestException, Inject, Injectable, ValidationPipe } from '@nestjs/common';
import { ToolSpec } from '@tapyard/ai';
import { CodegenService } from '@tapyard/codegen';
import { CONFIG, NotFoundError, TapyardConfig, ValidationError } from '@tapyard/core';
import { SAMPLE_BYTES, SchemaDiscoveryService, UploadService } from '@tapyard/ingestion';
import { MetadataService } from '@tapyard/metadata';
import { NlQueryService } from '@tapyard/nl-query';
import { PipelineConfigDto, PipelineDefinition, PipelinePolicy, PipelinesService } from '@tapyard/pipelines';
import { StatusService } from '@tapyard/status';
import { TapAuthoringService } from '@tapyard/tap-authoring';
import { TapPolicy, TapRunner, TapsRepository, TapsService } from '@tapyard/taps';
import { SearchService, VectorStoresService } from '@tapyard/vector-stores';
import { pipelineFields, tapFields } from '../auth/scopes';
import { SearchRequestDto } from '../search/search.dto';
import { AttachmentsService } from './attachments.service';
import { AnsweredAction } from './pending-actions';
import { ToolGate } from './tool-gate';

export interface ToolContext {
  env: string;
  gate: ToolGate;
  /** Whose attachments the tools may read. */
  owner: string;
  signal: AbortSignal;
}

/** Looks things up, changes nothing: runs as soon as the model asks. */
interface ReadTool extends ToolSpec {
  effect: 'read';
  run(ctx: ToolContext, args: Record<string, unknown>): Promise<unknown>;
}

/**
 * Runs code, saves, registers, loads, restores or hands a secret on: runs only once the user confirms
 * it. `prepare` checks the call (capabilities, arguments) and performs nothing; the function it returns
 * performs it.
 */
interface ActingTool extends ToolSpec {
  effect: 'act';
  prepare(ctx: ToolContext, args: Record<string, unknown>): Promise<() => Promise<unknown>>;
}

type Tool = ReadTool | ActingTool;

const obj = (properties: Record<string, unknown>, required: string[] = []): Record<string, unknown> => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});
const str = (description: string) => ({ type: 'string', description });
const int = (description: string) => ({ type: 'integer', description });

/** A string argument, or a 400 naming it (the model sees the message). */
function text(args: Record<string, unknown>, key: string, required = true): string {
  const v = args[key];
  if (typeof v === 'string' && v.trim() !== '') return v.trim();
  if (!required && (v === undefined || v === null || v === '')) return '';
  throw new ValidationError(`argument '${key}' must be a non-empty string`);
}
function optionalInt(args: Record<string, unknown>, key: string, fallback: number, max: number): number {
  const v = args[key];
  if (v === undefined || v === null) return fallback;
  if (!Number.isInteger(v) || (v as number) < 0 || (v as number) > max) {
    throw new ValidationError(`argument '${key}' must be a whole number from 0 to ${max}`);
  }
  return v as number;
}

/** The body a route would have validated: the same DTO and the same pipe options. */
const pipe = new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true, transform: true });
async function validated<T>(metatype: new () => T, value: unknown): Promise<T> {
  try {
    return (await pipe.transform(value, { type: 'body', metatype })) as T;
  } catch (err) {
    if (err instanceof BadRequestException) {
      const body = err.getResponse() as { message?: string | string[] };
      const msg = Array.isArray(body.message) ? body.message.join('; ') : String(body.message ?? err.message);
      throw new ValidationError(msg);
    }
    throw err;
  }
}

/**
 * The assistant's tools: the platform's own services, each call checked against the caller's
 * capabilities as the matching HTTP route checks them (see ToolGate).
 */
@Injectable()
export class AssistantTools {
  private readonly tools: Tool[];

  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    private readonly pipelines: PipelinesService,
    private readonly pipelinePolicy: PipelinePolicy,
    private readonly discovery: SchemaDiscoveryService,
    private readonly uploads: UploadService,
    private readonly status: StatusService,
    private readonly taps: TapsService,
    private readonly tapsRepo: TapsRepository,
    private readonly runner: TapRunner,
    private readonly tapPolicy: TapPolicy,
    private readonly authoring: TapAuthoringService,
    private readonly search: SearchService,
    private readonly nl: NlQueryService,
    private readonly metadata: MetadataService,
    private readonly attachments: AttachmentsService,
    private readonly codegen: CodegenService,
  ) {
    this.tools = this.build();
  }

  specs(): ToolSpec[] {
    return this.tools.map(({ name, description, parameters }) => ({ name, description, parameters }));
  }

  /** Whether the tool acts (so waits for the user's confirmation); an unknown name does not. */
  acts(name: string): boolean {
    return this.tools.some((t) => t.name === name && t.effect === 'act');
  }

  /** Runs a read-only tool. */
  async run(ctx: ToolContext, name: string, args: Record<string, unknown>): Promise<unknown> {
    const tool = this.find(name);
    if (tool.effect !== 'read') throw new Error(`tool '${name}' acts: it runs only once confirmed`);
    return tool.run(ctx, args);
  }

  /** Checks an acting call as it would run, without running it: the user is asked only about calls that may. */
  async check(ctx: ToolContext, name: string, args: Record<string, unknown>): Promise<void> {
    await this.acting(name).prepare(ctx, args);
  }

  /** Performs a confirmed call with the arguments the user saw, checked again as the caller is now. */
  async perform(ctx: ToolContext, action: AnsweredAction): Promise<unknown> {
    if (!action.approved) throw new Error('a declined action is never performed');
    const act = await this.acting(action.call.name).prepare(ctx, action.call.arguments);
    return act();
  }

  private find(name: string): Tool {
    const tool = this.tools.find((t) => t.name === name);
    if (!tool) throw new ValidationError(`there is no tool '${name.slice(0, 60)}'`);
    return tool;
  }

  private acting(name: string): ActingTool {
    const tool = this.find(name);
    if (tool.effect !== 'act') throw new Error(`tool '${name}' does not act`);
    return tool;
  }

  private async pipelineTarget(env: string, name: string) {
    const found = await this.pipelines.find(env, name);
    return found
      ? [{ fields: pipelineFields(found.definition), hiddenMessage: `pipeline '${name}' does not exist` }]
      : [];
  }

  private async tapTarget(env: string, name: string) {
    const found = await this.tapsRepo.find(env, name);
    return found ? [{ fields: tapFields(found), hiddenMessage: `tap '${name}' does not exist` }] : [];
  }

  /** A stored tap, or one about to be (uncataloged, of `tapType`), as tapInBody / tapNamedInBody check it. */
  private async tapTargetOrNew(env: string, name: string, tapType: string = 'structured') {
    const stored = await this.tapTarget(env, name);
    return stored.length > 0
      ? stored
      : [{ fields: tapFields({ catalog: null, tapType }), hiddenMessage: `tap '${name}' does not exist` }];
  }

  private build(): Tool[] {
    return [
      {
        name: 'list_pipelines',
        effect: 'read',
        description:
          'List the pipelines the user may read: name, catalog, source type, destinations, version.',
        parameters: obj({}),
        run: async (ctx) => {
          const access = ctx.gate.check('list_pipelines', 'pipeline:read', 'filtered');
          const all = await this.pipelines.listWithDefinitions(ctx.env);
          return access
            .filter(all, 'read', 'pipeline', (p) => pipelineFields(p.definition))
            .map((p) => p.item);
        },
      },
      {
        name: 'get_pipeline',
        effect: 'read',
        description: 'The full configuration of one pipeline.',
        parameters: obj({ name: str('pipeline name') }, ['name']),
        run: async (ctx, a) => {
          const name = text(a, 'name');
          ctx.gate.check('get_pipeline', 'pipeline:read', await this.pipelineTarget(ctx.env, name));
          const p = await this.pipelines.get(ctx.env, name);
          return { ...p.definition, version: p.version };
        },
      },
      {
        name: 'generate_pipeline_from_attachment',
        effect: 'read',
        description:
          'Propose a pipeline configuration (types inferred) from an attached CSV, JSON or XML file. Register it with register_pipeline.',
        parameters: obj(
          { attachmentId: str('an attachment of this conversation'), name: str('pipeline name (optional)') },
          ['attachmentId'],
        ),
        run: async (ctx, a) => {
          ctx.gate.check('generate_pipeline_from_attachment', 'pipeline:create', 'environment');
          const id = text(a, 'attachmentId');
          const att = await this.attachments.find(ctx.env, ctx.owner, id);
          const { head, truncated } = await this.attachments.head(ctx.env, ctx.owner, id, SAMPLE_BYTES);
          const fields = new Map<string, string>();
          const name = text(a, 'name', false);
          if (name) fields.set('pipeline', name);
          return this.discovery.generateFromSample(ctx.env, {
            filename: att.filename,
            fields,
            head,
            truncated,
          });
        },
      },
      {
        name: 'register_pipeline',
        effect: 'act',
        description: 'Create or update a pipeline from a full configuration (as POST /pipeline takes it).',
        parameters: obj({ config: { type: 'object', description: 'the pipeline configuration' } }, [
          'config',
        ]),
        prepare: async (ctx, a) => {
          const body = (a.config ?? {}) as Record<string, unknown>;
          const name = typeof body.name === 'string' ? body.name.trim() : '';
          const incoming = {
            fields: pipelineFields({
              catalog: typeof body.catalog === 'string' && body.catalog.trim() ? body.catalog.trim() : null,
              destination: (body.destination ?? {}) as PipelineDefinition['destination'],
              source: (body.source ?? {}) as PipelineDefinition['source'],
            }),
            hiddenMessage: `pipeline '${name}' cannot be saved in that catalog`,
          };
          const access = ctx.gate.check('register_pipeline', 'pipeline:update', [
            ...(name ? await this.pipelineTarget(ctx.env, name) : []),
            incoming,
          ]);
          // Refused before the user is asked, as the route would refuse it (the save checks again).
          this.pipelinePolicy.assertMaySave(access, {
            destination: body.destination as PipelineConfigDto['destination'],
          });
          const dto = await validated(PipelineConfigDto, body);
          // Refused now, as the route refuses the body, not once the caller has confirmed.
          this.pipelines.checkDestination(dto.destination);
          return async () => {
            const saved = await this.pipelines.save(ctx.env, dto, access);
            this.codegen.afterSave(ctx.env, saved.name);
            return { status: 'ok', ...saved };
          };
        },
      },
      {
        name: 'get_codegen_scripts',
        effect: 'read',
        description:
          "A pipeline's AI-written data-quality and transformation scripts (status, version, model, storage, drift) " +
          'with the version history of each.',
        parameters: obj({ pipeline: str('pipeline name') }, ['pipeline']),
        run: async (ctx, a) => {
          const name = text(a, 'pipeline');
          ctx.gate.check('get_codegen_scripts', 'pipeline:read', await this.pipelineTarget(ctx.env, name));
          const entries = await this.codegen.entries(ctx.env, name);
          const versions: Record<string, unknown> = {};
          for (const [kind, entry] of Object.entries(entries)) {
            if (entry) versions[kind] = await this.codegen.versions(ctx.env, name, kind);
          }
          return { entries, versions };
        },
      },
      {
        name: 'restore_codegen_script_version',
        effect: 'act',
        description:
          "Make an earlier version of a pipeline's data-quality or transformation script live again, as a new " +
          'version (no model call). Refused when it was written for another instruction or schema.',
        parameters: obj(
          {
            pipeline: str('pipeline name'),
            kind: { type: 'string', enum: ['dataQuality', 'transformation'] },
            version: int('the version number to restore'),
          },
          ['pipeline', 'kind', 'version'],
        ),
        prepare: async (ctx, a) => {
          const name = text(a, 'pipeline');
          // Agent-policy action pipeline:update:codegen-scripts: the route's capability, and its audit.
          const access = ctx.gate.check(
            'restore_codegen_script_version',
            'pipeline:update',
            await this.pipelineTarget(ctx.env, name),
          );
          const version = optionalInt(a, 'version', -1, 1_000_000);
          if (version < 1) throw new ValidationError("argument 'version' must be a version number");
          const kind = text(a, 'kind');
          return () => this.codegen.restore(ctx.env, name, kind, version, { actor: access.identity.name });
        },
      },
      {
        name: 'upload_attachment',
        effect: 'act',
        description:
          'Load an attached file into a pipeline (one job); returns the pipeline token to follow with job_status.',
        parameters: obj({ attachmentId: str('an attachment'), pipeline: str('target pipeline') }, [
          'attachmentId',
          'pipeline',
        ]),
        prepare: async (ctx, a) => {
          const access = ctx.gate.check('upload_attachment', 'pipeline:upload', 'none');
          const id = text(a, 'attachmentId');
          const att = await this.attachments.find(ctx.env, ctx.owner, id);
          const pipeline = text(a, 'pipeline');
          return async () => {
            const body = await this.attachments.open(ctx.env, ctx.owner, id);
            const pipelineToken = await this.uploads.uploadStream(
              ctx.env,
              pipeline,
              att.filename,
              body,
              access,
            );
            return { pipelineToken };
          };
        },
      },
      {
        name: 'job_status',
        effect: 'read',
        description:
          'The rollup of a job (by pipelineToken) or of everything under a publisherToken: status, errors, progress.',
        parameters: obj({ pipelineToken: str('a job'), publisherToken: str('a publisher token') }),
        run: async (ctx, a) => {
          const access = ctx.gate.check('job_status', 'job:read', 'filtered');
          const visible = <T extends { scope?: unknown }>(jobs: T[]): T[] =>
            access.filter(jobs, 'read', 'job', (j) => (j.scope ?? {}) as Record<string, string>);
          const pub = text(a, 'publisherToken', false);
          const job = text(a, 'pipelineToken', false);
          if (pub) return this.status.rollupOfPublisher(ctx.env, pub, visible);
          if (job) return this.status.rollupOfJob(ctx.env, job, visible);
          throw new ValidationError('give pipelineToken or publisherToken');
        },
      },
      {
        name: 'list_taps',
        effect: 'read',
        description: 'List the taps the user may read.',
        parameters: obj({}),
        run: async (ctx) => {
          const access = ctx.gate.check('list_taps', 'tap:read', 'filtered');
          return access.filter(await this.taps.list(ctx.env), 'read', 'tap', tapFields);
        },
      },
      {
        name: 'get_tap',
        effect: 'read',
        description: 'One tap with its script.',
        parameters: obj({ name: str('tap name') }, ['name']),
        run: async (ctx, a) => {
          const name = text(a, 'name');
          ctx.gate.check('get_tap', 'tap:read', await this.tapTarget(ctx.env, name));
          return this.taps.getWithScript(ctx.env, name);
        },
      },
      {
        name: 'test_tap',
        effect: 'act',
        description:
          'Test a saved tap (or an inline script for it, which runs without any secret) in the sandbox: at most 20 ' +
          'records, nothing saved.',
        parameters: obj(
          {
            name: str('tap name'),
            script: str('inline script (optional)'),
            testLimit: int('SERVICE_TAP_TEST_LIMIT'),
          },
          ['name'],
        ),
        prepare: async (ctx, a) => {
          const name = text(a, 'name');
          const access = ctx.gate.check('test_tap', 'tap:run', await this.tapTargetOrNew(ctx.env, name));
          const script = text(a, 'script', false) || undefined;
          const testLimit = optionalInt(a, 'testLimit', 20, 1_000_000);
          if (script === undefined) {
            // The stored code as it is, with its secret: what tap:run allows on the route too.
            return async () => (await this.runner.testAs(access, ctx.env, { name }, testLimit)).result;
          }
          // Code the model wrote may come from whatever it read: it never gets a secret, even confirmed
          // by a holder of secret:use (who can save the tap to hand it one).
          const stored = await this.tapsRepo.find(ctx.env, name);
          const note = stored?.secretName
            ? `an inline script from the assistant runs without secrets: secret '${stored.secretName}' of tap '${name}' was not given to it`
            : 'an inline script from the assistant runs without secrets';
          return async () => {
            const body = { name, script, secretName: null };
            return { ...(await this.runner.testAs(access, ctx.env, body, testLimit)).result, note };
          };
        },
      },
      {
        name: 'generate_tap_script',
        effect: 'act',
        description:
          'Write a tap script from a description (checked, stored as a new version; save the tap to adopt it).',
        parameters: obj(
          {
            tapName: str('tap name'),
            description: str('what the tap fetches'),
            tapType: { type: 'string', enum: ['structured', 'document'] },
          },
          ['tapName', 'description'],
        ),
        prepare: async (ctx, a) => {
          const tapName = text(a, 'tapName');
          const tapType =
            a.tapType === 'document' ? 'document' : a.tapType === 'structured' ? 'structured' : undefined;
          const target = await this.tapTargetOrNew(ctx.env, tapName, tapType);
          const access = ctx.gate.check('generate_tap_script', 'tap:update', target);
          const description = text(a, 'description');
          return () =>
            this.authoring.generate(ctx.env, { tapName, description, tapType }, access, ctx.signal);
        },
      },
      {
        name: 'fix_tap_script',
        effect: 'act',
        description:
          'Rewrite a failing tap script from its error and logs (checked, stored as a new version).',
        parameters: obj(
          {
            tapName: str('tap name'),
            script: str('the script'),
            error: str('the error'),
            logs: str('the logs'),
          },
          ['tapName', 'script'],
        ),
        prepare: async (ctx, a) => {
          const tapName = text(a, 'tapName');
          ctx.gate.check('fix_tap_script', 'tap:update', await this.tapTargetOrNew(ctx.env, tapName));
          const failing = {
            tapName,
            script: text(a, 'script'),
            error: text(a, 'error', false),
            logs: text(a, 'logs', false),
          };
          return () => this.authoring.fix(ctx.env, failing, ctx.signal);
        },
      },
      {
        name: 'run_tap',
        effect: 'act',
        description: 'Run a saved tap now: its records go to its target pipeline. Returns the run result.',
        parameters: obj({ name: str('tap name') }, ['name']),
        prepare: async (ctx, a) => {
          const name = text(a, 'name');
          const access = ctx.gate.check('run_tap', 'tap:run', await this.tapTarget(ctx.env, name));
          // Refused before the user is asked, as the route would refuse it (the run checks again).
          await this.tapPolicy.assertMayRun(access, ctx.env, await this.taps.get(ctx.env, name));
          return () => this.runner.run(ctx.env, name, { mode: 'run', trigger: 'manual', access });
        },
      },
      {
        name: 'vector_search',
        effect: 'read',
        description:
          'Similarity search over a vector store (qdrant, weaviate, pgvector, milvus, chroma). Container: collection (qdrant, milvus, chroma), className (weaviate), table + schema (pgvector).',
        parameters: obj(
          {
            store: { type: 'string', enum: ['qdrant', 'weaviate', 'pgvector', 'milvus', 'chroma'] },
            query: str('what to look for'),
            topK: int('results (default 5)'),
            collection: str('container (qdrant, milvus, chroma)'),
            className: str('weaviate class'),
            table: str('pgvector table'),
            schema: str('pgvector schema'),
          },
          ['store', 'query'],
        ),
        run: async (ctx, a) => {
          const access = ctx.gate.check('vector_search', 'search:vector', 'none');
          const store = VectorStoresService.checkName(text(a, 'store'));
          const { store: _s, ...rest } = a;
          const body = await validated(SearchRequestDto, rest);
          return this.search.search(ctx.env, store, body, (collection) =>
            access.permits('vector', 'search', { collection }),
          );
        },
      },
      {
        name: 'sql_query',
        effect: 'read',
        description:
          'Answer a question with one read-only SQL query over a PostgreSQL schema the user may read; returns rows.',
        parameters: obj(
          {
            question: str('the question'),
            database: str('database (optional)'),
            schema: str('schema (optional)'),
            maxRows: int('row cap (default 100)'),
          },
          ['question'],
        ),
        run: async (ctx, a) => {
          const database = text(a, 'database', false) || this.config.database.name;
          ctx.gate.check('sql_query', 'search:query', [
            { fields: { database }, hiddenMessage: `PostgreSQL database '${database}' does not exist` },
          ]);
          return this.nl.ask(
            ctx.env,
            {
              question: text(a, 'question'),
              database: text(a, 'database', false) || undefined,
              schema: text(a, 'schema', false) || undefined,
              maxRows: optionalInt(a, 'maxRows', 100, 10_000) || 100,
            },
            ctx.signal,
          );
        },
      },
      {
        name: 'discover_metadata',
        effect: 'read',
        description:
          'What exists in the data stores: kind = databases | schemas | tables | columns (PostgreSQL, with database/schema/table), mongodb_databases, mongodb_collections.',
        parameters: obj(
          {
            kind: {
              type: 'string',
              enum: ['databases', 'schemas', 'tables', 'columns', 'mongodb_databases', 'mongodb_collections'],
            },
            database: str('database'),
            schema: str('schema'),
            table: str('table'),
          },
          ['kind'],
        ),
        run: async (ctx, a) => {
          const kind = text(a, 'kind');
          const db = text(a, 'database', false) || undefined;
          if (kind === 'databases' || kind.startsWith('mongodb_')) {
            const access = ctx.gate.check('discover_metadata', 'metadata:read', 'filtered');
            if (kind === 'databases') {
              return access.filter(
                await this.metadata.postgresDatabases(access.viewer),
                'read',
                'metadata',
                (d) => ({ database: d }),
              );
            }
            if (kind === 'mongodb_databases') {
              return access.filter(
                await this.metadata.mongoDatabases(access.viewer),
                'read',
                'metadata',
                (d) => ({
                  database: d,
                }),
              );
            }
            if (db) {
              access.assertVisible(
                'read',
                'metadata',
                { database: db },
                `MongoDB database '${db}' does not exist`,
              );
              return this.metadata.mongoCollections(access.viewer, db);
            }
            // All databases' collections: only those of databases the caller may read (as the route does).
            return access.filter(
              await this.metadata.mongoCollections(access.viewer),
              'read',
              'metadata',
              (name) => ({
                database: name.slice(0, name.indexOf('.')),
              }),
            );
          }
          const database = db ?? this.config.database.name;
          const { viewer } = ctx.gate.check('discover_metadata', 'metadata:read', [
            { fields: { database }, hiddenMessage: `PostgreSQL database '${database}' does not exist` },
          ]);
          const schema = text(a, 'schema', false) || undefined;
          if (kind === 'schemas') return this.metadata.postgresSchemas(viewer, db);
          if (kind === 'tables') return this.metadata.postgresTables(viewer, db, schema);
          if (kind === 'columns') return this.metadata.postgresColumns(viewer, db, schema, text(a, 'table'));
          throw new NotFoundError(`there is no metadata kind '${kind.slice(0, 40)}'`);
        },
      },
    ];
  }
}
