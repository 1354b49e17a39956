import { OptionalNotNull } from '@tapyard/core';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsIn,
  IsInt,
  IsObject,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';

export class AssistantMessageDto {
  @ApiPropertyOptional({ enum: ['user', 'assistant'], default: 'user' })
  @OptionalNotNull()
  @IsIn(['user', 'assistant'], { message: 'role must be user or assistant' })
  role?: 'user' | 'assistant';

  @ApiProperty({ example: 'Make a pipeline from the attached file and load it' })
  @IsString()
  @MaxLength(50_000)
  content!: string;
}

export class AttachmentRefDto {
  @ApiProperty({ example: '0b6c7f1e-6b0a-4a8e-9d3c-1f2e3d4c5b6a' })
  @IsString()
  @MaxLength(64)
  attachmentId!: string;
}

export class ChatDto {
  @ApiProperty({
    type: [AssistantMessageDto],
    description: 'The conversation so far, oldest first; the last is the new turn',
  })
  @IsArray()
  @ArrayMaxSize(200)
  @ValidateNested({ each: true })
  @Type(() => AssistantMessageDto)
  messages!: AssistantMessageDto[];

  @ApiPropertyOptional({
    default: 8,
    minimum: 1,
    maximum: 50,
    description: 'Model rounds at most (each may run tools)',
  })
  @OptionalNotNull()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(50)
  maxIterations?: number;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description:
      'What the client is showing, for the model only (e.g. `{"page": "pipeline", "pipeline": "sales"}`): at most 8 KB ' +
      'of JSON, passed to the model as text; never used to decide what the caller may do.',
  })
  @OptionalNotNull()
  @IsObject()
  context?: Record<string, unknown>;

  @ApiPropertyOptional({
    type: [AttachmentRefDto],
    description: 'Files staged with POST /assistant/attachment by this caller',
  })
  @OptionalNotNull()
  @IsArray()
  @ArrayMaxSize(20)
  @ValidateNested({ each: true })
  @Type(() => AttachmentRefDto)
  attachments?: AttachmentRefDto[];

  @ApiPropertyOptional({
    description:
      'Names the conversation: pending actions belong to it. Sent back as the `conversationId` of `pending_action`; ' +
      'chosen by the server when the client gives none.',
    example: '5d0c6a9e-8f0e-4a34-b0b1-0f6b3d1c2e11',
  })
  @OptionalNotNull()
  @IsString()
  @Matches(/^[A-Za-z0-9._:-]{1,100}$/, {
    message: 'conversationId must be 1 to 100 letters, digits or . _ : -',
  })
  conversationId?: string;

  @ApiPropertyOptional({
    description:
      'The `actionId` of a `pending_action` of this conversation to run as it was shown (once; with conversationId)',
  })
  @OptionalNotNull()
  @IsString()
  @MaxLength(100)
  confirm?: string;

  @ApiPropertyOptional({
    description: 'The `actionId` of a `pending_action` of this conversation not to run (with conversationId)',
  })
  @OptionalNotNull()
  @IsString()
  @MaxLength(100)
  reject?: string;
}

export class AttachmentDto {
  @ApiProperty() attachmentId!: string;
  @ApiProperty({ example: 'orders.csv' }) filename!: string;
  @ApiProperty({ example: 5120 }) size!: number;
  @ApiProperty({ example: 'text/csv' }) contentType!: string;
}

export class AttachmentFormDto {
  @ApiProperty({ type: 'string', format: 'binary' }) file!: unknown;
}

export class CancelTurnDto {
  @ApiProperty({ description: 'The `turnId` of the `turn` event that opened the chat stream' })
  @IsString()
  @MaxLength(100)
  turnId!: string;
}

export class TurnCancelledDto {
  @ApiProperty() turnId!: string;
  @ApiProperty({
    enum: ['cancelling'],
    description: 'The turn stops; its stream ends with `done` `cancelled`',
  })
  status!: 'cancelling';
}
