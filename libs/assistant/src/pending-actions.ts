import { createHash, randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { AuthRedis, randomToken } from '@tapyard/auth';
import { CONFIG, NotFoundError, TapyardConfig, ValidationError } from '@tapyard/core';

/** A tool call the model asked for, held until the user answers it. */
export interface ProposedCall {
  /** The model's tool-call id, which the client already saw in `tool_call`. */
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

/**
 * A call the user answered. Only `PendingActions.take` makes one (the class is not exported), so an
 * acting tool runs with the arguments that were shown and confirmed, never with ones the model
 * writes again.
 */
class Answered {
  constructor(
    readonly call: ProposedCall,
    readonly approved: boolean,
  ) {}
}
export type AnsweredAction = Answered;

/**
 * Acting tool calls waiting for the user's yes or no, in Redis so any API instance can take the
 * answer. The key is a digest of the caller, the conversation and the action id together: another
 * identity or conversation finds nothing (404) and cannot use up the owner's action. Taking one
 * deletes it in the same transaction (single use); unanswered ones expire.
 */
@Injectable()
export class PendingActions {
  constructor(
    private readonly redis: AuthRedis,
    @Inject(CONFIG) private readonly config: TapyardConfig,
  ) {}

  async propose(
    environment: string,
    owner: string,
    conversationId: string,
    call: ProposedCall,
  ): Promise<{ actionId: string; expiresAt: string }> {
    const actionId = randomToken();
    const ttl = this.config.assistant.actionTtlSeconds;
    await this.redis.run((r) =>
      r.set(key(environment, owner, conversationId, actionId), JSON.stringify(call), 'EX', ttl),
    );
    return { actionId, expiresAt: new Date(Date.now() + ttl * 1000).toISOString() };
  }

  /**
   * The conversation a chat request continues (a new one when it names none) and the action it
   * answers, if any, taken from the store: a second answer, another caller's or a late one is 404.
   */
  async answer(
    environment: string,
    owner: string,
    request: { conversationId?: string; confirm?: string; reject?: string },
  ): Promise<{ conversationId: string; answered: AnsweredAction | null }> {
    const { confirm, reject } = request;
    if (confirm !== undefined && reject !== undefined) {
      throw new ValidationError('give confirm or reject, not both', [
        { field: 'reject', problem: 'cannot come with confirm' },
      ]);
    }
    const actionId = confirm ?? reject;
    if (actionId === undefined)
      return { conversationId: request.conversationId ?? randomUUID(), answered: null };
    const conversationId = request.conversationId;
    if (conversationId === undefined) {
      throw new ValidationError(`${confirm !== undefined ? 'confirm' : 'reject'} needs the conversationId`, [
        { field: 'conversationId', problem: 'is required to answer a pending action' },
      ]);
    }
    const k = key(environment, owner, conversationId, actionId);
    const replies = await this.redis.run((r) => r.multi().get(k).del(k).exec());
    const raw = replies?.[0]?.[1];
    if (typeof raw !== 'string') {
      throw new NotFoundError(
        'there is no pending assistant action with that id in this conversation for this caller ' +
          '(unknown, answered already, or expired)',
      );
    }
    return { conversationId, answered: new Answered(JSON.parse(raw) as ProposedCall, confirm !== undefined) };
  }
}

function key(environment: string, owner: string, conversationId: string, actionId: string): string {
  const digest = createHash('sha256')
    .update(`${owner}\0${conversationId}\0${actionId}`, 'utf8')
    .digest('hex');
  return `tapyard:${environment}:assistant-action:${digest}`;
}
