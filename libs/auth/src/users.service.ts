import { Inject, Injectable } from '@nestjs/common';
import {
  CONFIG,
  ConflictError,
  ErrorDetail,
  NotFoundError,
  TapyardConfig,
  ValidationError,
} from '@tapyard/core';
import { Grantor, assertMayGrant } from './ability';
import { DUMMY_HASH, hashPassword, verifyPassword } from './passwords';
import { ROLES, ROLE_CAPABILITIES, Role } from './templates';
import { UserRow, UsersRepository } from './users.repository';
import { AuthErrorCode } from './auth-errors';

export interface UserView {
  username: string;
  role: Role;
  createdAt: string;
  updatedAt: string;
}

const USERNAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const MIN_PASSWORD = 12;
const MAX_PASSWORD = 1024;

const view = (u: UserRow): UserView => ({
  username: u.username,
  role: u.role,
  createdAt: u.createdAt.toISOString(),
  updatedAt: u.updatedAt.toISOString(),
});

@Injectable()
export class UsersService {
  constructor(
    private readonly repo: UsersRepository,
    @Inject(CONFIG) private readonly config: TapyardConfig,
  ) {}

  async list(environment: string): Promise<UserView[]> {
    return (await this.repo.list(environment)).map(view);
  }

  find(environment: string, username: string): Promise<UserRow | null> {
    return this.repo.find(environment, username);
  }

  /** The caller must hold everything the role grants (admin: `*:*`). */
  async create(
    environment: string,
    username: string,
    password: string,
    role: string,
    grantor: Grantor,
  ): Promise<UserView> {
    check([usernameProblem(username), passwordProblem(password), roleProblem(role)]);
    mayGiveRole(grantor, role as Role);
    if (!(await this.repo.insert(environment, username, role as Role, await hashPassword(password)))) {
      throw new ConflictError(`user '${username}' already exists`).coded(AuthErrorCode.UserExists);
    }
    return view((await this.repo.find(environment, username)) as UserRow);
  }

  /**
   * Changing a user's password or role is taking over or reshaping what that user holds, so the
   * caller must hold the user's current role and the new one.
   */
  async update(
    environment: string,
    username: string,
    change: { password?: string; role?: string },
    grantor: Grantor,
  ): Promise<UserView> {
    check([
      change.password === undefined ? null : passwordProblem(change.password),
      change.role === undefined ? null : roleProblem(change.role),
    ]);
    if (change.password === undefined && change.role === undefined) {
      throw new ValidationError('give password or role to change').coded(AuthErrorCode.InvalidUser);
    }
    const role = change.role as Role | undefined;
    if (role !== undefined) mayGiveRole(grantor, role);
    const passwordHash = change.password === undefined ? undefined : await hashPassword(change.password);
    this.outcome(
      await this.repo.change(environment, username, { role, passwordHash }, (current) =>
        mayTouchUser(grantor, current, 'change'),
      ),
      username,
    );
    return view((await this.repo.find(environment, username)) as UserRow);
  }

  /** Like a change: only a caller holding the user's role may delete that user. */
  async delete(environment: string, username: string, grantor: Grantor): Promise<void> {
    this.outcome(
      await this.repo.change(environment, username, 'delete', (current) =>
        mayTouchUser(grantor, current, 'delete'),
      ),
      username,
    );
  }

  /** The user when the password matches; the same work is done for unknown users (no timing oracle). */
  async verify(environment: string, username: string, password: string): Promise<UserRow | null> {
    const user = USERNAME.test(username) ? await this.repo.find(environment, username) : null;
    const ok = await verifyPassword(password.slice(0, MAX_PASSWORD), user?.passwordHash ?? DUMMY_HASH);
    return ok && user ? user : null;
  }

  /** Bootstrap: with user auth on and no admin, create `admin` from TAPYARD_ADMIN_PASSWORD or refuse to start. */
  async ensureAdmin(environment: string): Promise<'created' | 'present'> {
    if (await this.repo.hasAdmin(environment)) return 'present';
    const password = this.config.auth.adminPassword;
    if (password === null) {
      throw new Error(
        'USE_USER_AUTH=true and no admin user exists: set TAPYARD_ADMIN_PASSWORD to create the user `admin`',
      );
    }
    await this.repo.insert(environment, 'admin', 'admin', await hashPassword(password));
    if (!(await this.repo.hasAdmin(environment))) {
      throw new Error(
        "a user 'admin' exists without the admin role: give some user the admin role, then restart",
      );
    }
    return 'created';
  }

  private outcome(result: 'done' | 'missing' | 'last-admin', username: string): void {
    if (result === 'missing')
      throw new NotFoundError(`user '${username}' does not exist`).coded(AuthErrorCode.UserNotFound);
    if (result === 'last-admin') {
      throw new ConflictError(`user '${username}' is the last admin: make another user admin first`).coded(
        AuthErrorCode.LastAdmin,
      );
    }
  }
}

function mayGiveRole(grantor: Grantor, role: Role): void {
  assertMayGrant(grantor, ROLE_CAPABILITIES[role], `give role '${role}'`);
}

function mayTouchUser(grantor: Grantor, user: UserRow, act: 'change' | 'delete'): void {
  assertMayGrant(grantor, ROLE_CAPABILITIES[user.role], `${act} user '${user.username}' (role ${user.role})`);
}

function check(problems: (ErrorDetail | null)[]): void {
  const details = problems.filter((p): p is ErrorDetail => p !== null);
  if (details.length > 0)
    throw new ValidationError(`${details[0].field} ${details[0].problem}`, details).coded(
      AuthErrorCode.InvalidUser,
    );
}

function usernameProblem(u: unknown): ErrorDetail | null {
  return typeof u === 'string' && USERNAME.test(u)
    ? null
    : {
        field: 'username',
        problem: 'must be 1-64 lowercase letters, digits, ., _ or -, starting with a letter or digit',
      };
}

function passwordProblem(p: unknown): ErrorDetail | null {
  return typeof p === 'string' && p.length >= MIN_PASSWORD && p.length <= MAX_PASSWORD
    ? null
    : { field: 'password', problem: `must be ${MIN_PASSWORD} to ${MAX_PASSWORD} characters` };
}

function roleProblem(r: unknown): ErrorDetail | null {
  return typeof r === 'string' && (ROLES as readonly string[]).includes(r)
    ? null
    : { field: 'role', problem: `must be one of ${ROLES.join(', ')}` };
}
