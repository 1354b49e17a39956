import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SwaggerModule } from '@nestjs/swagger';
import { offlineDocument } from '../apps/api/src/openapi';
import { startApi } from './support/apps';
import { uniqueEnvironment } from './support/env';

/**
 * The build generates the console's typed client from the document openapi.ts makes without a server:
 * it must be the very document the running API serves, or the console would be typed against another API.
 */
describe('the OpenAPI document made without a server', () => {
  it('equals the one the API serves at /api/docs-json', async () => {
    const api = await startApi({ TAPYARD_ENV: uniqueEnvironment('openapi') });
    try {
      const served = await api.http.get('/api/docs-json').expect(200);
      const offline = await offlineDocument(api.config);
      expect(Object.keys(offline.paths)).toContain('/api/v1/pipeline/upload');
      expect(JSON.parse(JSON.stringify(offline))).toEqual(served.body);
    } finally {
      await api.close();
    }
  });

  // Building it scans every controller and DTO, as much CPU as the rest of the boot: a process that
  // never serves it (a replica, most test apps) must not pay for it.
  it('is built on the first request for it, not at boot, and then kept', async () => {
    const built = jest.spyOn(SwaggerModule, 'createDocument');
    const api = await startApi({ TAPYARD_ENV: uniqueEnvironment('openapi-lazy') });
    try {
      expect(built).not.toHaveBeenCalled();
      const first = await api.http.get('/api/docs-json').expect(200);
      expect(built).toHaveBeenCalledTimes(1);
      await api.http.get('/api/docs/swagger-ui-init.js').expect(200);
      const again = await api.http.get('/api/docs-json').expect(200);
      expect(again.body).toEqual(first.body);
      expect(built).toHaveBeenCalledTimes(1);
    } finally {
      built.mockRestore();
      await api.close();
    }
  });
});

describe('the build step that writes the OpenAPI document', () => {
  // A newcomer's first `npm test` builds before any script has generated a master key: the document,
  // which holds no secret, must not need one.
  it('needs no master key (a machine where none was ever generated)', () => {
    const home = mkdtempSync(join(tmpdir(), 'openapi-home-'));
    try {
      const out = execFileSync(process.execPath, ['dist/apps/api/src/openapi.js'], {
        env: { PATH: process.env.PATH, HOME: home },
        encoding: 'utf8',
        maxBuffer: 64 << 20,
      });
      const document = JSON.parse(out) as { paths: Record<string, unknown> };
      expect(Object.keys(document.paths)).toContain('/api/v1/pipeline/upload');
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
