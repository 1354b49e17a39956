import { Body, Controller, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBody,
  ApiConsumes,
  ApiOkResponse,
  ApiOperation,
  ApiProduces,
  ApiTags,
} from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Logger } from 'pino';
import { AiService, ChatTurn } from '@tapyard/ai';
import { CONFIG, LOGGER, TapyardConfig, errorMessage } from '@tapyard/core';
import { Access, AuditLog } from '@tapyard/auth';
import { Requires } from '../auth/access-rule';
import { RequestAccess, RequestEnvironment } from '../http/environment.decorator';
import { ApiErrors } from '../http/api-errors.decorator';
import {
  AgentEvent,
  AssistantTools,
  AssistantTurns,
  Attachment,
  AttachmentsService,
  ATTACHMENT_LIMIT,
  PendingActions,
  ToolGate,
  agentLoop,
} from '@tapyard/assistant';
import { AttachmentDto, AttachmentFormDto, CancelTurnDto, ChatDto, TurnCancelledDto } from './assistant.dto';

@ApiTags('assistant')
@Controller('assistant')
export class AssistantController {
  private readonly audit: AuditLog;

  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly ai: AiService,
    private readonly tools: AssistantTools,
    private readonly attachments: AttachmentsService,
    private readonly actions: PendingActions,
    private readonly turns: AssistantTurns,
  ) {
    this.audit = new AuditLog(logger);
  }

  @Post('attachment')
  @HttpCode(201)
  @Requires('assistant:run', 'none')
  @ApiOperation({
    summary: 'Stage a file for the assistant',
    description:
      `multipart \`file\`, at most ${ATTACHMENT_LIMIT} bytes: .csv, .tsv, .txt, .md, .json, .ndjson, .jsonl, .xml, .html, .pdf, ` +
      '.docx (the first bytes must fit the type: PDF magic, a ZIP container, UTF-8 text without NUL). Readable only by ' +
      'the identity that staged it (another one gets 404), for 24 hours.',
  })
  @ApiConsumes('multipart/form-data')
  @ApiBody({ type: AttachmentFormDto })
  @ApiOkResponse({ type: AttachmentDto })
  @ApiErrors(413, 415)
  attach(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Req() req: Request,
  ): Promise<Attachment> {
    return this.attachments.stage(env, access.identity.name, req);
  }

  @Post('chat')
  @Requires('assistant:run', 'none')
  @ApiProduces('text/event-stream')
  @ApiOperation({
    summary: 'The build-mode agent loop, streamed as Server-Sent Events',
    description:
      'Events: `text {delta}`, `tool_call {id, name, arguments}`, `tool_result {id, name, result}` or `{id, name, error}`, ' +
      '`pending_action {id, name, arguments, actionId, conversationId, expiresAt}`, `error {message}`, ' +
      '`done {iterations, stopReason, awaitingConfirmation?}` (`complete`, `max_iterations`, `error`, `cancelled`). The ' +
      'first event is `turn {turnId, conversationId}`: POST /assistant/chat/cancel with that `turnId` stops the turn ' +
      'from any API instance. Read-only tools (list_pipelines, get_pipeline, ' +
      'generate_pipeline_from_attachment, get_codegen_scripts, job_status, list_taps, get_tap, vector_search, ' +
      'sql_query, discover_metadata) run when the model asks. Acting tools (register_pipeline, ' +
      'restore_codegen_script_version, upload_attachment, test_tap, generate_tap_script, fix_tap_script, run_tap) are ' +
      'checked, then wait for the user: the turn ends with `pending_action` (arguments with credentials masked) and ' +
      '`done` `{stopReason: "complete", awaitingConfirmation: <count>}`; a next request with the same `conversationId` and `confirm` (or `reject`) set to the ' +
      '`actionId` runs exactly that call (or not), once, for the same caller, before the model continues. An inline ' +
      "script the model proposes to test_tap never gets a secret. Each call is checked against the caller's " +
      "capabilities as its HTTP route is (a denial is the tool result the model sees) and audited with the caller's " +
      'identity; tool results reach the model as data marked untrusted. Comments (`: keep-alive`) keep the stream open ' +
      'during long tool calls. Disconnecting cancels too: the model call in flight is aborted and no further tool runs.',
  })
  @ApiOkResponse({ description: 'text/event-stream' })
  @ApiErrors({
    404:
      "An attachment that is not the caller's (or expired); a confirm or reject naming no pending action of this " +
      'caller and conversation (unknown, answered already, or expired)',
    503: "No model provider (secret 'ai')",
  })
  async chat(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Body() body: ChatDto,
    @Res() res: Response,
  ): Promise<void> {
    const owner = access.identity.name;
    // Refusals come as JSON errors before the stream starts.
    const model = await this.ai.model(env, 'assistant');
    const staged = await Promise.all(
      (body.attachments ?? []).map((a) => this.attachments.find(env, owner, a.attachmentId)),
    );
    const context = body.context ? JSON.stringify(body.context).slice(0, 8192) : '';
    const { conversationId, answered } = await this.actions.answer(env, owner, body);
    const turn = await this.turns.start(env, owner);

    // Two ways a turn stops early: the client goes away (nothing more is written), or it is cancelled
    // through any API instance (the stream then ends with `done` `cancelled`).
    const gone = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) gone.abort();
    });
    const signal = AbortSignal.any([gone.signal, turn.signal]);
    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache, no-transform');
    res.setHeader('Connection', 'keep-alive');
    res.setHeader('X-Accel-Buffering', 'no');
    res.flushHeaders();
    const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), this.config.assistant.keepAliveMs);
    const send = (e: AgentEvent): void => {
      if (!gone.signal.aborted) res.write(`event: ${e.event}\ndata: ${JSON.stringify(e.data)}\n\n`);
    };
    send({ event: 'turn', data: { turnId: turn.turnId, conversationId } });

    const gate = new ToolGate(
      access.identity,
      this.config.auth.capabilityEnforcement === 'enforce',
      this.audit,
    );
    const messages: ChatTurn[] = body.messages.map((m) => ({ role: m.role ?? 'user', content: m.content }));
    let outcome = { stopReason: 'error', iterations: 0 };
    try {
      const loop = agentLoop(model, this.tools, { env, gate, owner, signal }, messages, {
        maxIterations: body.maxIterations ?? 8,
        context,
        attachments: staged.map((a) => JSON.stringify(a)).join('\n'),
        actions: {
          conversationId,
          propose: (call) => this.actions.propose(env, owner, conversationId, call),
        },
        answered,
      });
      for (;;) {
        const step = await loop.next();
        if (step.done) {
          outcome = step.value;
          break;
        }
        send(step.value);
      }
      if (outcome.stopReason === 'cancelled') {
        send({ event: 'done', data: { iterations: outcome.iterations, stopReason: 'cancelled' } });
      }
    } catch (err) {
      send({ event: 'error', data: { message: 'the assistant failed; see the server log' } });
      send({ event: 'done', data: { iterations: outcome.iterations, stopReason: 'error' } });
      this.logger.error({ err: errorMessage(err) }, 'assistant loop failed');
    } finally {
      clearInterval(keepAlive);
      await turn.end();
      this.logger.info(
        {
          route: 'POST /api/v1/assistant/chat',
          key: owner,
          stopReason: outcome.stopReason,
          iterations: outcome.iterations,
          ...(answered ? { answered: answered.call.name, approved: answered.approved } : {}),
        },
        'assistant chat',
      );
      if (!res.writableEnded) res.end();
    }
  }

  @Post('chat/cancel')
  @HttpCode(202)
  @Requires('assistant:run', 'none')
  @ApiOperation({
    summary: 'Cancel a running assistant turn',
    description:
      'Stops the turn a chat stream announced in its first event (`turn {turnId}`), whichever API instance runs it: ' +
      'the model call in flight is aborted, no further tool runs, and that stream ends with `done` ' +
      '`{stopReason: "cancelled"}`. Only the caller who started the turn can cancel it.',
  })
  @ApiAcceptedResponse({ type: TurnCancelledDto })
  @ApiErrors({
    404: 'No running turn with that id for this caller (unknown, ended, or started by someone else)',
  })
  async cancel(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Body() body: CancelTurnDto,
  ): Promise<TurnCancelledDto> {
    await this.turns.cancel(env, access.identity.name, body.turnId);
    return { turnId: body.turnId, status: 'cancelling' };
  }
}
