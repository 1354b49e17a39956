import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Role } from './templates';

export interface UserRow {
  username: string;
  role: Role;
  passwordHash: string;
  /** Copied into each login session; a session with another epoch has ended (see sessions.ts). */
  sessionEpoch: string;
  createdAt: Date;
  updatedAt: Date;
}

interface RawUser {
  username: string;
  role: Role;
  password_hash: string;
  session_epoch: string;
  created_at: Date;
  updated_at: Date;
}

const toRow = (r: RawUser): UserRow => ({
  username: r.username,
  role: r.role,
  passwordHash: r.password_hash,
  sessionEpoch: r.session_epoch,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

@Injectable()
export class UsersRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async list(environment: string): Promise<UserRow[]> {
    const rows: RawUser[] = await this.db.query(
      'SELECT * FROM tapyard.users WHERE environment = $1 ORDER BY username',
      [environment],
    );
    return rows.map(toRow);
  }

  async find(environment: string, username: string): Promise<UserRow | null> {
    const rows: RawUser[] = await this.db.query(
      'SELECT * FROM tapyard.users WHERE environment = $1 AND username = $2',
      [environment, username],
    );
    return rows[0] ? toRow(rows[0]) : null;
  }

  /** False when the username is taken. */
  async insert(environment: string, username: string, role: Role, passwordHash: string): Promise<boolean> {
    const rows: unknown[] = await this.db.query(
      `INSERT INTO tapyard.users (environment, username, role, password_hash) VALUES ($1, $2, $3, $4)
       ON CONFLICT (environment, username) DO NOTHING RETURNING username`,
      [environment, username, role, passwordHash],
    );
    return rows.length > 0;
  }

  /**
   * Applies a change unless it would leave the environment without an admin; the check and the write
   * run under one lock so two concurrent demotions cannot both pass. `allow` sees the user as it is
   * under that lock and throws to refuse (the caller may not touch a user of that role).
   */
  async change(
    environment: string,
    username: string,
    change: { role?: Role; passwordHash?: string } | 'delete',
    allow: (current: UserRow) => void,
  ): Promise<'done' | 'missing' | 'last-admin'> {
    return this.db.transaction(async (m) => {
      await m.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`tapyard-users:${environment}`]);
      const [user]: RawUser[] = await m.query(
        'SELECT * FROM tapyard.users WHERE environment = $1 AND username = $2',
        [environment, username],
      );
      if (!user) return 'missing';
      allow(toRow(user));
      const losesAdmin =
        user.role === 'admin' && (change === 'delete' || (change.role && change.role !== 'admin'));
      if (losesAdmin) {
        const [{ n }]: { n: number }[] = await m.query(
          `SELECT count(*)::int AS n FROM tapyard.users WHERE environment = $1 AND role = 'admin'`,
          [environment],
        );
        if (n <= 1) return 'last-admin';
      }
      if (change === 'delete') {
        await m.query('DELETE FROM tapyard.users WHERE environment = $1 AND username = $2', [
          environment,
          username,
        ]);
      } else {
        // A new password or another role ends every session of the user: a new epoch.
        const endsSessions =
          change.passwordHash !== undefined || (change.role !== undefined && change.role !== user.role);
        await m.query(
          `UPDATE tapyard.users SET role = coalesce($3, role), password_hash = coalesce($4, password_hash),
             session_epoch = CASE WHEN $5 THEN gen_random_uuid() ELSE session_epoch END,
             updated_at = now() WHERE environment = $1 AND username = $2`,
          [environment, username, change.role ?? null, change.passwordHash ?? null, endsSessions],
        );
      }
      return 'done';
    });
  }

  async hasAdmin(environment: string): Promise<boolean> {
    const rows: unknown[] = await this.db.query(
      `SELECT 1 FROM tapyard.users WHERE environment = $1 AND role = 'admin' LIMIT 1`,
      [environment],
    );
    return rows.length > 0;
  }
}
