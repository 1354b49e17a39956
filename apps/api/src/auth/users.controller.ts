import { Body, Controller, Delete, Get, Param, Post, Put } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Access, UsersService } from '@tapyard/auth';
import { ApiErrors } from '../http/api-errors.decorator';
import { RequestAccess, RequestEnvironment } from '../http/environment.decorator';
import { StatusOkDto } from '../secrets/secrets.dto';
import { Requires } from './access-rule';
import { CreateUserDto, UpdateUserDto, UserDto } from './auth.dto';

const ROLE_REFUSED =
  'The caller does not hold every capability of the role involved (admin: *:*); the message names them';

@ApiTags('users')
@Controller('users')
export class UsersController {
  constructor(private readonly users: UsersService) {}

  @Get()
  @Requires('user:read')
  @ApiOperation({ summary: 'Login users (admin)' })
  @ApiOkResponse({ type: [UserDto] })
  list(@RequestEnvironment() env: string): Promise<UserDto[]> {
    return this.users.list(env);
  }

  @Post()
  @Requires('user:create')
  @ApiOperation({
    summary: 'Create a user (admin); roles admin, editor, viewer',
    description: 'The caller must hold every capability of the role it gives (admin = `*:*`).',
  })
  @ApiCreatedResponse({ type: UserDto })
  @ApiErrors(400, { 403: ROLE_REFUSED, 409: 'The username exists' })
  create(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Body() body: CreateUserDto,
  ): Promise<UserDto> {
    return this.users.create(env, body.username, body.password, body.role, access.identity);
  }

  @Put(':username')
  @Requires('user:update')
  @ApiOperation({
    summary: 'Change a user’s password and/or role (admin)',
    description:
      'The caller must hold every capability of the user’s current role and of the new one. A new password or ' +
      'another role ends every login session of that user (the caller’s own too, when it changes itself).',
  })
  @ApiOkResponse({ type: UserDto })
  @ApiErrors(404, { 403: ROLE_REFUSED, 409: 'Would leave no admin' })
  update(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Param('username') username: string,
    @Body() body: UpdateUserDto,
  ): Promise<UserDto> {
    return this.users.update(env, username, body, access.identity);
  }

  @Delete(':username')
  @Requires('user:delete')
  @ApiOperation({
    summary: 'Delete a user (admin); their sessions stop working',
    description:
      'The caller must hold every capability of the user’s role. A user created later under the same name does not ' +
      'inherit the old sessions.',
  })
  @ApiOkResponse({ type: StatusOkDto })
  @ApiErrors(404, { 403: ROLE_REFUSED, 409: 'The last admin' })
  async remove(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Param('username') username: string,
  ): Promise<StatusOkDto> {
    await this.users.delete(env, username, access.identity);
    return { status: 'ok' };
  }
}
