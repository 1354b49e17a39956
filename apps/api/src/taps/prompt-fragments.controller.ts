import { Body, Controller, Delete, Get, Header, HttpCode, Param, Post, Put } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import { PromptFragment, PromptFragmentsService, TapAuthoringService } from '@tapyard/tap-authoring';
import { ApiErrors } from '../http/api-errors.decorator';
import { RequestEnvironment, RequestSignal } from '../http/environment.decorator';
import { Requires } from '../auth/access-rule';
import {
  OkDto,
  PromptFragmentDto,
  PutPromptFragmentDto,
  SuggestPromptFragmentDto,
} from './tap-authoring.dto';

/**
 * Tap prompt fragments (addendum paths): the organisation's own instructions, injected into tap AI
 * prompts when their key or an alias occurs as a whole word (case-insensitive) in the user's text.
 */
@ApiTags('taps')
@Controller('tap/prompt-fragments')
export class PromptFragmentsController {
  constructor(
    private readonly fragments: PromptFragmentsService,
    private readonly authoring: TapAuthoringService,
  ) {}

  @Get()
  @Requires('tap:read', 'none')
  @ApiOperation({ summary: 'Every prompt fragment of the environment (tenant), by key' })
  @ApiOkResponse({ type: [PromptFragmentDto] })
  list(@RequestEnvironment() env: string): Promise<PromptFragment[]> {
    return this.fragments.list(env);
  }

  @Post('suggest')
  @HttpCode(200)
  @Requires('tap:update', 'none')
  @Header('Content-Type', 'text/plain; charset=utf-8')
  @ApiProduces('text/plain')
  @ApiOperation({
    summary: 'Let the model write a fragment’s content; non-empty content is refined, not replaced',
    description: 'Answers the text only (text/plain); nothing is stored.',
  })
  @ApiOkResponse({ schema: { type: 'string' } })
  @ApiErrors({ 503: "No model provider: create the secret 'ai'" })
  suggest(
    @RequestEnvironment() env: string,
    @Body() body: SuggestPromptFragmentDto,
    @RequestSignal() signal: AbortSignal,
  ): Promise<string> {
    return this.authoring.suggestFragment(
      env,
      { key: body.key, aliases: body.aliases ?? [], content: body.content },
      signal,
    );
  }

  @Get(':key')
  @Requires('tap:read', 'none')
  @ApiOperation({ summary: 'One fragment (key URL-encoded)' })
  @ApiOkResponse({ type: PromptFragmentDto })
  @ApiErrors(404)
  get(@RequestEnvironment() env: string, @Param('key') key: string): Promise<PromptFragment> {
    return this.fragments.get(env, key);
  }

  @Put(':key')
  @Requires('tap:update', 'environment')
  @ApiOperation({
    summary: 'Create or update a fragment',
    description:
      '`createdAt` is kept across updates, `updatedAt` refreshed. The write is seen by the next request on every ' +
      'API instance (each compares a per-environment generation before using its cache).',
  })
  @ApiOkResponse({ type: OkDto })
  async put(
    @RequestEnvironment() env: string,
    @Param('key') key: string,
    @Body() body: PutPromptFragmentDto,
  ): Promise<OkDto> {
    await this.fragments.put(env, key, body.aliases ?? [], body.content);
    return { status: 'ok' };
  }

  @Delete(':key')
  @Requires('tap:update', 'environment')
  @ApiOperation({ summary: 'Delete a fragment' })
  @ApiOkResponse({ type: OkDto })
  @ApiErrors(404)
  async remove(@RequestEnvironment() env: string, @Param('key') key: string): Promise<OkDto> {
    await this.fragments.delete(env, key);
    return { status: 'ok' };
  }
}
