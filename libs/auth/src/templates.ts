import { FULL_ACCESS } from './capability';

/**
 * Issuance templates. Why each grants what it does is in docs/auth.md ("Templates").
 * Keys and users are never in a template below full access: administering access is admin work.
 */
export const TEMPLATES = {
  'read-only': ['pipeline:read', 'job:read', 'tap:read', 'config:read', 'metadata:read', 'platform:read'],
  'rag-builder': [
    'pipeline:read',
    'pipeline:create',
    'pipeline:update',
    'pipeline:upload',
    'job:read',
    'document:*',
    'search:*',
    'tap:*',
    'config:read',
    'config:create',
    'metadata:read',
    'platform:read',
  ],
  reporting: ['pipeline:read', 'job:read', 'metadata:read', 'search:query', 'platform:read'],
  ops: [
    'platform:*',
    'job:*',
    'pipeline:read',
    'pipeline:upload',
    'tap:read',
    'tap:run',
    'secret:*',
    'metadata:read',
    'incident:*',
  ],
  'full-access': [FULL_ACCESS],
} as const satisfies Record<string, readonly string[]>;

export type TemplateName = keyof typeof TEMPLATES;
export const TEMPLATE_NAMES = Object.keys(TEMPLATES) as TemplateName[];

export const ROLES = ['admin', 'editor', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

const READABLE = [
  'pipeline',
  'job',
  'document',
  'tap',
  'config',
  'metadata',
  'platform',
  'codegen',
  'incident',
];

/** Capabilities of a login session by role (spec: admin all; editor create, update, run; viewer read). */
export const ROLE_CAPABILITIES: Record<Role, readonly string[]> = {
  admin: [FULL_ACCESS],
  editor: [
    ...READABLE.map((r) => `${r}:read`),
    ...['pipeline', 'tap', 'config', 'codegen', 'incident', 'document'].flatMap((r) => [
      `${r}:create`,
      `${r}:update`,
    ]),
    'pipeline:upload',
    'document:upload',
    'tap:run',
    'search:*',
    'assistant:*',
    'secret:read',
    'secret:use',
  ],
  // The assistant's tools are checked one by one: a viewer's assistant can only read.
  viewer: [...READABLE.map((r) => `${r}:read`), 'search:vector', 'search:query', 'assistant:run'],
};
