import { randomBytes } from 'node:crypto';
import type TestAgent from 'supertest/lib/agent';
import { LogCapture } from './log-capture';

export const newBootstrapKey = (): string => `boot-${randomBytes(24).toString('hex')}`;

/** Issues a key through the real route; returns its value. */
export async function issueKey(
  http: TestAgent,
  adminKey: string,
  label: string,
  grant: { template: string } | { capabilities: string[] },
  extra: Record<string, unknown> = {},
): Promise<string> {
  const res = await http
    .post('/api/v1/keys')
    .set('x-api-key', adminKey)
    .send({ label, ...grant, ...extra })
    .expect(201);
  return (res.body as { key: string }).key;
}

export interface AuditLine {
  route: string;
  required: string;
  key: string;
  legacy: boolean;
  outcome: string;
  scope?: Record<string, unknown>;
}

export function auditLines(logs: LogCapture): AuditLine[] {
  return logs.parsed().filter((l) => l.msg === 'access') as unknown as AuditLine[];
}

export function authFailures(logs: LogCapture): { route: string; reason: string; label?: string }[] {
  return logs.parsed().filter((l) => l.msg === 'authentication failed') as unknown as {
    route: string;
    reason: string;
    label?: string;
  }[];
}

export interface Login {
  /** `tapyard_session=<id>`, ready for a Cookie header. */
  cookie: string;
  csrf: string;
}

/** Logs in through the real route (optionally from a client address: X-Forwarded-For with TRUST_PROXY). */
export async function login(
  http: TestAgent,
  username: string,
  password: string,
  from?: string,
): Promise<Login> {
  let req = http.post('/api/v1/auth/login');
  if (from) req = req.set('x-forwarded-for', from);
  const res = await req.send({ username, password }).expect(200);
  const cookies = res.headers['set-cookie'] as unknown as string[];
  const session = cookies.find((c) => c.startsWith('tapyard_session=')) as string;
  return { cookie: session.split(';')[0], csrf: res.body.csrfToken as string };
}
