import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  BrainstormResult,
  OptimizeResult,
  ReviewResult,
  ScriptResult,
  TapAuthoringService,
} from '@tapyard/tap-authoring';
import { ApiErrors } from '../http/api-errors.decorator';
import { RequestAccess, RequestEnvironment, RequestSignal } from '../http/environment.decorator';
import { Access } from '@tapyard/auth';
import { Requires } from '../auth/access-rule';
import { tapNamedInBody } from '../auth/scopes';
import {
  BrainstormDto,
  BrainstormResultDto,
  FixDto,
  GenerateDto,
  OptimizeDto,
  OptimizeResultDto,
  ReviewDto,
  ReviewResultDto,
  ScriptResultDto,
} from './tap-authoring.dto';

const NO_PROVIDER = "No model provider: create the secret 'ai' (the message names it)";
const PROVIDER_FAILED =
  'The model provider failed or gave no usable answer twice (the message names the provider)';
const CHECKS =
  "The model's script failed the platform's checks twice (parses as Python 3, defines fetch(), reads " +
  'SERVICE_TAP_TEST_LIMIT and its secret from the environment, no inlined secret value, only standard-library and ' +
  "declared imports; review/optimise also keep the original's fetch() signature, environment reads, retries and " +
  'status checks); `details` lists the problems';

/** AI-assisted tap authoring (spec "Taps": brainstorm, generate, fix, review, optimize). */
@ApiTags('taps')
@Controller('tap')
export class TapAuthoringController {
  constructor(private readonly authoring: TapAuthoringService) {}

  @Post('brainstorm')
  @HttpCode(200)
  // Authoring that spends the model provider's budget: not for read-only keys. It names no tap, so any scope passes.
  @Requires('tap:update', 'none')
  @ApiOperation({
    summary:
      'Talk a tap through with the model: a reply, the description so far, environment variables to set',
    description:
      'Matching prompt fragments are added to the prompt. `suggestedEnvVars` never lists the variables the ' +
      'platform injects. For document taps the model asks about the document source only, never about chunking, ' +
      'embedding or vector stores (an answer that does is sent back once). Sends the conversation only.',
  })
  @ApiOkResponse({ type: BrainstormResultDto })
  @ApiErrors({ 503: NO_PROVIDER, 502: PROVIDER_FAILED })
  brainstorm(
    @RequestEnvironment() env: string,
    @Body() body: BrainstormDto,
    @RequestSignal() signal: AbortSignal,
  ): Promise<BrainstormResult> {
    return this.authoring.brainstorm(
      env,
      {
        messages: body.messages,
        currentDescription: body.currentDescription,
        tapType: body.tapType ?? 'structured',
      },
      signal,
    );
  }

  @Post('generate')
  @HttpCode(200)
  @Requires('tap:update', tapNamedInBody)
  @ApiOperation({
    summary: 'Write a tap script from a description; stored as a new version',
    description:
      'The model gets the description, the rules for tap scripts (document taps: records {uri, filename, content}, no ' +
      "chunking, no embedding, no local-filesystem fallback), the secret's field names (never values) and the " +
      'matching prompt fragments. The script is checked before it is stored at tap-scripts/<tap>_<suffix>.py ' +
      "(the tap's configuration is not changed: save the tap with this scriptPath to adopt it). A `secretName` " +
      'needs secret:use.',
  })
  @ApiOkResponse({ type: ScriptResultDto })
  @ApiErrors({
    400: 'Unknown secret, tapType change, foreign oldScriptPath',
    422: CHECKS,
    503: NO_PROVIDER,
    502: PROVIDER_FAILED,
  })
  generate(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Body() body: GenerateDto,
    @RequestSignal() signal: AbortSignal,
  ): Promise<ScriptResult> {
    return this.authoring.generate(env, body, access, signal);
  }

  @Post('fix')
  @HttpCode(200)
  @Requires('tap:update', tapNamedInBody)
  @ApiOperation({
    summary: 'Rewrite a failing script from its error, logs and a diagnosis; stored as a new version',
    description: 'Sends the script, the error, the diagnosis and the end of the logs. Checked like generate.',
  })
  @ApiOkResponse({ type: ScriptResultDto })
  @ApiErrors({ 422: CHECKS, 503: NO_PROVIDER, 502: PROVIDER_FAILED })
  fix(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Body() body: FixDto,
    @RequestSignal() signal: AbortSignal,
  ): Promise<ScriptResult> {
    return this.authoring.fix(env, body, access, signal);
  }

  @Post('review')
  @HttpCode(200)
  @Requires('tap:update', tapNamedInBody)
  @ApiOperation({
    summary: 'Review a tested script: rewrite only when its logs show a signal',
    description:
      'Signals: a traceback, error or warning lines, rate limiting (429), server errors (5xx), timeouts, retries, ' +
      'deprecations, or no records. Without one nothing is sent to the model and the answer is the input with ' +
      "`rewritten: false` and empty `changes`. With one, the rewrite is checked (and must keep fetch()'s " +
      'signature, the test-limit handling, environment reads, retries and status checks) and stored as a new ' +
      'version: `rewritten: true`; re-test it and do not optimise in that pass (spec rule 5).',
  })
  @ApiOkResponse({ type: ReviewResultDto })
  @ApiErrors({ 422: CHECKS, 503: NO_PROVIDER })
  review(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Body() body: ReviewDto,
    @RequestSignal() signal: AbortSignal,
  ): Promise<ReviewResult> {
    return this.authoring.review(env, body, access, signal);
  }

  @Post('optimize')
  @HttpCode(200)
  @Requires('tap:update', tapNamedInBody)
  @ApiOperation({
    summary: 'Make a script faster; empty `changes` returns the input script and scriptPath',
    description:
      "The rewrite's syntax tree must keep the original's fetch() signature, SERVICE_TAP_TEST_LIMIT handling, " +
      'environment (secret) reads, retry/back-off and raise_for_status calls; a rewrite that does not is sent back ' +
      'once, then refused (422). Stored as a new version. `verify: true` applies the 20 % regression guard on the ' +
      'server (needs tap:run, and secret:use for a tap with a secret).',
  })
  @ApiOkResponse({ type: OptimizeResultDto })
  @ApiErrors({ 422: CHECKS, 503: NO_PROVIDER })
  optimize(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Body() body: OptimizeDto,
    @RequestSignal() signal: AbortSignal,
  ): Promise<OptimizeResult> {
    return this.authoring.optimize(env, body, access, signal);
  }
}
