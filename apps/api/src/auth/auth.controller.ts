import { Body, Controller, Get, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import {
  Access,
  AuthMode,
  Authenticator,
  CSRF_COOKIE,
  LoginService,
  SESSION_COOKIE,
  SessionStore,
} from '@tapyard/auth';
import { CONFIG, TapyardConfig } from '@tapyard/core';
import { ApiErrors } from '../http/api-errors.decorator';
import { RequestAccess } from '../http/environment.decorator';
import { TapyardRequest } from '../http/request-context';
import { StatusOkDto } from '../secrets/secrets.dto';
import { Public, SignedIn } from './access-rule';
import { AuthModeDto, LoginDto, LoginResultDto, MeDto } from './auth.dto';
import { cookies } from './credentials';

@ApiTags('auth')
@Controller('auth')
export class AuthController {
  constructor(
    private readonly sessions: SessionStore,
    private readonly logins: LoginService,
    private readonly authenticator: Authenticator,
    @Inject(CONFIG) private readonly config: TapyardConfig,
  ) {}

  @Get('mode')
  @Public()
  @ApiOperation({
    summary: 'Which credentials this instance asks for (no credentials needed)',
    description:
      'For a console before anyone signs in: whether to show a login (`useUserAuth`), ask for a pasted key ' +
      '(`useApiKeys`) and expect tenant keys (`multiTenant`). Nothing else is told here; `GET /version` needs a ' +
      'key like every other route when API keys are on.',
  })
  @ApiOkResponse({ type: AuthModeDto })
  mode(): AuthMode {
    return this.authenticator.mode();
  }

  @Post('login')
  @HttpCode(200)
  @Public()
  @ApiOperation({
    summary: 'Log in (USE_USER_AUTH=true)',
    description:
      'Sets the HttpOnly cookie `tapyard_session` (SameSite=Lax; Secure over TLS) and the readable cookie `tapyard_csrf`. ' +
      'Writes made with the cookie must send that token as `x-csrf-token`. Failed logins slow down, never lock an ' +
      'account for long: after LOGIN_BACKOFF_AFTER failures of one username from one client address that pair waits ' +
      'LOGIN_BACKOFF_SECONDS, doubling per further failure (up to LOGIN_BACKOFF_MAX_SECONDS); after ' +
      'LOGIN_ACCOUNT_BACKOFF_AFTER failures of one username from any addresses the account waits the same way, up ' +
      'to LOGIN_ACCOUNT_BACKOFF_MAX_SECONDS (a few seconds); an address with LOGIN_MAX_FAILURES_PER_ADDRESS ' +
      'failures (any usernames) waits LOGIN_WINDOW_SECONDS. Meanwhile 429 with Retry-After, even for the right ' +
      'password. From another address the owner waits at most the account back-off. Tap runs cannot log in (403).',
  })
  @ApiOkResponse({ type: LoginResultDto })
  @ApiErrors(429, {
    401: 'Wrong username or password',
    403: 'Sent by a tap run (marked by the egress proxy)',
  })
  async login(
    @Req() req: TapyardRequest,
    @Res({ passthrough: true }) res: Response,
    @Body() body: LoginDto,
  ): Promise<LoginResultDto> {
    const address = req.ip ?? req.socket.remoteAddress ?? 'unknown';
    const { user, id, session } = await this.logins.login(
      this.config.environment,
      body.username,
      body.password,
      address,
    );
    const base = {
      sameSite: 'lax' as const,
      secure: req.secure,
      path: '/',
      maxAge: this.config.auth.sessionTtlSeconds * 1000,
    };
    res.cookie(SESSION_COOKIE, id, { ...base, httpOnly: true });
    res.cookie(CSRF_COOKIE, session.csrf, { ...base, httpOnly: false });
    return { username: user.username, role: user.role, csrfToken: session.csrf };
  }

  @Post('logout')
  @HttpCode(200)
  @Public({ sessionWrite: true })
  @ApiOperation({
    summary: 'End the login session (on every API instance) and clear its cookies',
    description:
      'With a live session cookie, send its token as `x-csrf-token` like on every cookie-authenticated write ' +
      '(403 otherwise, and the session stays); an expired or unknown cookie is simply cleared.',
  })
  @ApiOkResponse({ type: StatusOkDto })
  @ApiErrors({ 403: 'Live session cookie without its x-csrf-token' })
  async logout(@Req() req: TapyardRequest, @Res({ passthrough: true }) res: Response): Promise<StatusOkDto> {
    const id = cookies(req).get(SESSION_COOKIE);
    if (id && this.config.auth.useUserAuth) await this.sessions.destroy(this.config.environment, id);
    res.clearCookie(SESSION_COOKIE, { path: '/' });
    res.clearCookie(CSRF_COOKIE, { path: '/' });
    return { status: 'ok' };
  }

  @Get('me')
  @SignedIn()
  @ApiOperation({ summary: 'Who the caller is: key label or session user, role, capabilities, environment' })
  @ApiOkResponse({ type: MeDto })
  me(@RequestAccess() access: Access): MeDto {
    const i = access.identity;
    return {
      identity: i.name,
      kind: i.kind,
      ...(i.session ? { username: i.session.username, role: i.session.role } : {}),
      capabilities: [...i.capabilities],
      legacy: i.legacy,
      environment: i.environment,
    };
  }
}
