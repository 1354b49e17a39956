import { Injectable } from '@nestjs/common';
import {
  AssistantTool,
  AssistantToolSet,
  AttachmentsService,
  TextArg,
  ToolSet,
  tool,
} from '@tapyard/assistant';
import { SAMPLE_BYTES, SchemaDiscoveryService } from './schema-discovery.service';
import { UploadService } from './upload.service';

export class GeneratePipelineArgs {
  @TextArg('an attachment of this conversation')
  attachmentId!: string;

  @TextArg('pipeline name (optional)', { optional: true })
  name?: string;
}

export class UploadAttachmentArgs {
  @TextArg('an attachment')
  attachmentId!: string;

  @TextArg('target pipeline')
  pipeline!: string;
}

/** The tools that read the conversation's attachments: a proposed pipeline, or an upload into one. */
@Injectable()
@AssistantToolSet()
export class AttachmentTools implements ToolSet {
  constructor(
    private readonly attachments: AttachmentsService,
    private readonly discovery: SchemaDiscoveryService,
    private readonly uploads: UploadService,
  ) {}

  assistantTools(): AssistantTool[] {
    return [
      tool({
        name: 'generate_pipeline_from_attachment',
        effect: 'read',
        description:
          'Propose a pipeline configuration (types inferred) from an attached CSV, JSON or XML file. Register it with register_pipeline.',
        args: GeneratePipelineArgs,
        run: async (ctx, { attachmentId: id, name }) => {
          ctx.gate.check('generate_pipeline_from_attachment', 'pipeline:create', 'environment');
          const att = await this.attachments.find(ctx.env, ctx.owner, id);
          const { head, truncated } = await this.attachments.head(ctx.env, ctx.owner, id, SAMPLE_BYTES);
          const fields = new Map<string, string>();
          if (name) fields.set('pipeline', name);
          return this.discovery.generateFromSample(ctx.env, {
            filename: att.filename,
            fields,
            head,
            truncated,
          });
        },
      }),
      tool({
        name: 'upload_attachment',
        effect: 'act',
        description:
          'Load an attached file into a pipeline (one job); returns the pipeline token to follow with job_status.',
        args: UploadAttachmentArgs,
        prepare: async (ctx, { attachmentId: id, pipeline }) => {
          const access = ctx.gate.check('upload_attachment', 'pipeline:upload', 'none');
          const att = await this.attachments.find(ctx.env, ctx.owner, id);
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
      }),
    ];
  }
}
