import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { RunKeysModule } from '@tapyard/auth';
import { ObjectStoreModule } from '@tapyard/objectstore';
import { AssistantTools } from './assistant-tools';
import { AssistantTurns } from './assistant-turns';
import { AttachmentsService } from './attachments.service';
import { PendingActions } from './pending-actions';

/** The agent loop's services; the tools come from @AssistantToolSet() providers anywhere in the app. */
@Module({
  imports: [DiscoveryModule, RunKeysModule, ObjectStoreModule],
  providers: [AssistantTools, AssistantTurns, AttachmentsService, PendingActions],
  exports: [AssistantTools, AssistantTurns, AttachmentsService, PendingActions],
})
export class AssistantModule {}
