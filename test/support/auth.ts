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
