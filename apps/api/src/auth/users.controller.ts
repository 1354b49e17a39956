import { Body, Controller, Delete, Get, Param, Post, Put } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { UsersService } from '@tapyard/auth';
import { ErrorBodyDto } from '../http/error-body.dto';
import { RequestAccess, RequestEnvironment } from '../http/environment.decorator';
import { StatusOkDto } from '../secrets/secrets.dto';
import { Access } from './access';
import { Requires } from './access-rule';
import { CreateUserDto, UpdateUserDto, UserDto } from './auth.dto';

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
  @ApiOperation({ summary: 'Create a user (admin); roles admin, editor, viewer' })
  @ApiCreatedResponse({ type: UserDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto })
  @ApiConflictResponse({ type: ErrorBodyDto, description: 'The username exists' })
  create(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Body() body: CreateUserDto,
  ): Promise<UserDto> {
    return this.users.create(env, body.username, body.password, body.role, access.identity);
  }

  @Put(':username')
  @Requires('user:update')
  @ApiOperation({ summary: 'Change a user’s password and/or role (admin)' })
  @ApiOkResponse({ type: UserDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  @ApiConflictResponse({ type: ErrorBodyDto, description: 'Would leave no admin' })
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
  @ApiOperation({ summary: 'Delete a user (admin); their sessions stop working' })
  @ApiOkResponse({ type: StatusOkDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  @ApiConflictResponse({ type: ErrorBodyDto, description: 'The last admin' })
  async remove(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Param('username') username: string,
  ): Promise<StatusOkDto> {
    await this.users.delete(env, username, access.identity);
    return { status: 'ok' };
  }
}
