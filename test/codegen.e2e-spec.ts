import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Client } from 'pg';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { newBootstrapKey, issueKey } from './support/auth';
import { TEST_DATABASE_URL, TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { GitServer, startGitServer } from './support/git-server';
import { csvPipeline, upload, waitForJob } from './support/ingest';
import { ModelDouble } from './support/model-double';
import { until } from './support/wait';
import type { SchemaField } from '@tapyard/model';
import { fingerprint } from '@tapyard/scripts';

/**
 * CodeGen scripts end to end: the real API and worker, Postgres, MinIO, the real sandbox running the
 * scripts per batch inside the DataQuality and Transformation stages, a real git server on loopback
 * (git http-backend) for repository storage, and the OpenAI wire double writing the scripts.
 */

const DQ_V1 = `def check(rows):
    out = []
    for r in rows:
        if r["amount"] is not None and r["amount"] < 0:
            out.append("amount is negative")
        else:
            out.append(None)
    return out
`;
const DQ_V2 = DQ_V1.replace('"amount is negative"', '"amount below zero"');
const DQ_HUMAN = DQ_V1.replace('"amount is negative"', '"negative amount (edited by a person)"');
const DQ_HUMAN_2 = DQ_V1.replace('"amount is negative"', '"negative amount (second edit)"');
const DQ_NETWORK = `import socket

def check(rows):
    return [None for r in rows]
`;
const DQ_CRASHES_ON_SAMPLE = `def check(rows):
    raise ValueError("cannot judge " + str(len(rows)) + " rows")
`;
const DQ_CRASHES_ON_999 = `def check(rows):
    out = []
    for r in rows:
        if r["id"] == 999:
            raise RuntimeError("row 999 is cursed")
        out.append(None)
    return out
`;
const TF_V1 = `OUTPUT_COLUMNS = {"amount_cents": "bigint"}

def transform(rows):
    return [dict(r, amount_cents=None if r["amount"] is None else int(round(r["amount"] * 100))) for r in rows]
`;

const DQ_INSTRUCTION = 'Reject rows whose amount is negative.';
const TF_INSTRUCTION = 'Add amount_cents, the amount in cents.';
const TAP_SCRIPT = 'def fetch():\n    return [{"id": 1}, {"id": 2}]\n';

describe('CodeGen scripts (model double, real sandbox, MinIO, Postgres and a loopback git server)', () => {
  const env = uniqueEnvironment('codegen');
  const schema = 'ingest_test';
  const table = `sales_${env.replace(/[^a-z0-9]/g, '_')}`;
  const double = new ModelDouble();
  let git: GitServer;
  let api: TestApi;
  let worker: TestWorker;
  // A second worker: jobs racing for a missing script may run in two processes.
  let worker2: TestWorker;
  let pg: Client;

  const http = () => api.http;
  const entries = async (p = 'sales') =>
    (await http().get(`/api/v1/pipelines/${p}/codegen-scripts`).expect(200)).body;
  const versions = async (kind = 'dataQuality', p = 'sales') =>
    (await http().get(`/api/v1/pipelines/${p}/codegen-scripts/${kind}/versions`).expect(200)).body as {
      version: number;
      origin: string;
      model: string | null;
    }[];
  const restore = (v: number | string, kind = 'dataQuality', p = 'sales') =>
    http().post(`/api/v1/pipelines/${p}/codegen-scripts/${kind}/versions/${v}/restore`);
  const regenerate = (kind = 'dataQuality', overwrite = false) =>
    http().post(`/api/v1/pipelines/sales/codegen-scripts/${kind}/regenerate`).query({ overwrite });
  const reply = (script: string) => ({ json: { script } });
  const pipelineBody = (dq: string | null, tf: string | null) =>
    csvPipeline(
      'sales',
      table,
      [
        ['id', 'int'],
        ['amount', 'double'],
      ],
      {
        dataQuality: { aiInstruction: dq },
        transformation: { aiInstruction: tf },
      },
    );

  async function waitFor<T>(what: string, probe: () => Promise<T | null>, timeoutMs = 60_000): Promise<T> {
    const start = Date.now();
    for (;;) {
      const v = await probe();
      if (v !== null) return v;
      if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async function load(csv: string) {
    const token = await upload(http(), 'sales', csv, 'sales.csv');
    const job = await waitForJob(http(), token);
    const exists =
      (await pg.query(`SELECT to_regclass($1) AS t`, [`${schema}."${table}"`])).rows[0].t !== null;
    if (!exists) return { token, job, loaded: [], rejects: [] };
    const loaded = (await pg.query(`SELECT * FROM ${schema}."${table}" ORDER BY id`)).rows;
    const rejects = (
      await pg.query(
        `SELECT line::int AS line, stage, reason FROM ${schema}."${table}_rejects" WHERE pipeline_token = $1 ORDER BY line`,
        [token],
      )
    ).rows;
    await pg.query(`DELETE FROM ${schema}."${table}"`);
    return { token, job, loaded, rejects };
  }

  beforeAll(async () => {
    await double.start();
    git = await startGitServer({ username: 'x-access-token', password: 'git-token-not-to-be-seen' });
    await git.createRepo('scripts.git');
    const flags = {
      TAPYARD_ENV: env,
      ...TEST_OBJECT_STORE,
      TAP_EGRESS_ALLOW: double.address,
      CODE_REPOSITORY_ALLOW: '127.0.0.1',
    };
    api = await startApi(flags);
    worker = await startWorker(flags);
    worker2 = await startWorker(flags);
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
  }, 60_000);
  afterAll(async () => {
    await pg.end();
    await worker2.close();
    await worker.close();
    await api.close();
    await git.close();
    await double.stop();
  });
  beforeEach(() => double.reset());

  it('without a provider the entry is pending and a job fails its stage rather than load unchecked rows', async () => {
    await http().post('/api/v1/pipeline').send(pipelineBody(DQ_INSTRUCTION, null)).expect(200);
    const dq = await waitFor('pending entry', async () => {
      const e = (await entries()).dataQuality;
      return e?.pendingReason?.includes("secret 'ai'") ? e : null;
    });
    expect(dq).toMatchObject({
      kind: 'dataQuality',
      instruction: DQ_INSTRUCTION,
      status: 'pending',
      script: null,
    });
    expect((await entries()).transformation).toBeNull();
    const { job, loaded } = await load('id,amount\n1,5\n');
    expect(job.rollup.status).toBe('error');
    expect(job.rollup.jobs[0].lastError).toMatchObject({ processName: 'DataQuality' });
    expect(job.rollup.jobs[0].lastError?.description).toContain("secret 'ai'");
    expect(loaded).toEqual([]);
    expect(double.calls).toHaveLength(0);
  });

  describe('with a provider', () => {
    beforeAll(async () => {
      await http()
        .put('/api/v1/secrets/ai')
        .send({
          provider: 'openai-compatible',
          baseUrl: double.openaiUrl,
          model: 'base-1',
          'model.codegen': 'codegen-1',
        })
        .expect(200);
    });

    it('writes a missing script lazily when a job runs (origin run)', async () => {
      // Two jobs at once (one per worker, as the queue hands them out) find no script: one version goes live.
      double.script(reply(DQ_V1));
      const other = upload(http(), 'sales', 'id,amount\n5,5\n', 'other.csv').then((t) =>
        waitForJob(http(), t),
      );
      const { job, rejects } = await load('id,amount\n1,1\n2,-1\n');
      expect((await other).rollup.status).toBe('success');
      await pg.query(`DELETE FROM ${schema}."${table}"`); // the other job's row, whenever it landed
      expect(job.rollup.status).toBe('warning');
      expect(rejects).toEqual([{ line: 3, stage: 'DataQuality', reason: 'amount is negative' }]);
      expect((await versions()).map((v) => v.version)).toEqual([1]);
      // Whichever job came second waited for the first one's model call (or found its script live).
      expect(double.calls).toHaveLength(1);
      expect((await entries()).dataQuality).toMatchObject({
        origin: 'run',
        version: 1,
        status: 'ready',
        pendingReason: null,
      });
      // The model was told the contract and the columns it gets.
      const prompt = ModelDouble.promptText(double.calls[0]);
      expect(prompt).toContain('def check(rows):');
      expect(prompt).toContain('amount: double');
      expect(prompt).toContain(DQ_INSTRUCTION);
    });

    it("a job starting while the save's model call writes the script waits for it: one call, the saved script runs", async () => {
      // The model takes 3 s to answer the save; the job arrives meanwhile and finds no script yet.
      double.script({ delayMs: 3000, then: reply(DQ_V1) });
      const raceTable = `${table}_race`;
      const body = csvPipeline(
        'race',
        raceTable,
        [
          ['id', 'int'],
          ['amount', 'double'],
        ],
        { dataQuality: { aiInstruction: DQ_INSTRUCTION } },
      );
      await http().post('/api/v1/pipeline').send(body).expect(200);
      await waitFor('the save asking the model', async () => (double.calls.length === 1 ? true : null));
      const token = await upload(http(), 'race', 'id,amount\n1,1\n2,-1\n', 'race.csv');
      const job = await waitForJob(http(), token);
      const dq = (await entries('race')).dataQuality;
      expect(dq).toMatchObject({ origin: 'save', version: 1, status: 'ready' });
      // The job began before the script was written: it did meet the call in flight.
      const began = job.events.find((e) => e.processName === 'JobRunner' && e.state === 'begin');
      expect(began?.epoch).toBeLessThan(Date.parse(dq.generatedAt as string));
      expect(job.rollup.status).toBe('warning');
      expect(double.calls).toHaveLength(1);
      const rejects = await pg.query(
        `SELECT line::int AS line, reason FROM ${schema}."${raceTable}_rejects" WHERE pipeline_token = $1`,
        [token],
      );
      expect(rejects.rows).toEqual([{ line: 3, reason: 'amount is negative' }]);
      await http().delete('/api/v1/pipeline').query({ pipeline: 'race' });
    });

    it('passes over the mark of a model call whose process died (stale) and writes the script itself', async () => {
      const columns = [
        { name: 'id', type: 'int' },
        { name: 'amount', type: 'double' },
      ];
      const marks = (p: string) =>
        pg.query(`SELECT holder FROM tapyard.codegen_generations WHERE environment = $1 AND pipeline = $2`, [
          env,
          p,
        ]);
      // As a writer leaves it when its host dies mid-call: never renewed again, never removed.
      await pg.query(
        `INSERT INTO tapyard.codegen_generations (environment, pipeline, kind, fingerprint, holder, renewed_at)
         VALUES ($1, 'orphan', 'dataQuality', $2, gen_random_uuid(), now() - interval '31 seconds')`,
        [env, fingerprint(DQ_INSTRUCTION, columns as SchemaField[])],
      );
      double.script(reply(DQ_V1));
      const body = csvPipeline(
        'orphan',
        `${table}_orphan`,
        columns.map((c) => [c.name, c.type] as [string, string]),
        { dataQuality: { aiInstruction: DQ_INSTRUCTION } },
      );
      await http().post('/api/v1/pipeline').send(body).expect(200);
      const dq = await waitFor(
        'the script written past the stale mark',
        async () => {
          const e = (await entries('orphan')).dataQuality;
          return e?.status === 'ready' ? e : null;
        },
        20_000,
      );
      expect(dq).toMatchObject({ origin: 'save', version: 1 });
      expect(double.calls).toHaveLength(1);
      expect((await marks('orphan')).rows).toEqual([]);
      await http().delete('/api/v1/pipeline').query({ pipeline: 'orphan' });
    });

    it("writes a new instruction's script on save; DQ rejects rows with reasons, the transformation adds a column", async () => {
      double.script(reply(TF_V1));
      const saved = await http()
        .post('/api/v1/pipeline')
        .send(pipelineBody(DQ_INSTRUCTION, TF_INSTRUCTION))
        .expect(200);
      const both = await waitFor('both scripts ready', async () => {
        const e = await entries();
        return e.dataQuality?.status === 'ready' && e.transformation?.status === 'ready' ? e : null;
      });
      expect(both.dataQuality).toMatchObject({
        script: DQ_V1,
        model: 'codegen-1',
        modelIsCurrent: true,
        origin: 'run',
        version: 1,
        storage: 'minio',
        repoPath: null,
        commitSha: null,
        drift: false,
        conflict: false,
        pendingReason: null,
      });
      expect(both.dataQuality.fingerprint).toMatch(/^[0-9a-f]{64}$/);
      expect(both.transformation).toMatchObject({ script: TF_V1, origin: 'save', version: 1 });
      // Only the transformation was new; it was told to declare its columns.
      expect(double.calls).toHaveLength(1);
      expect(ModelDouble.promptText(double.calls[0])).toContain('OUTPUT_COLUMNS');
      // A script change is not a definition change.
      const def = (await http().get('/api/v1/pipeline').query({ pipeline: 'sales' }).expect(200)).body;
      expect(def.version).toBe(saved.body.version);

      const { job, loaded, rejects } = await load('id,amount\n1,2.5\n2,-4\n3,\n');
      expect(job.rollup.status).toBe('warning');
      expect(
        loaded.map((r) => [r.id, r.amount, r.amount_cents === null ? null : Number(r.amount_cents)]),
      ).toEqual([
        [1, 2.5, 250],
        [3, null, null],
      ]);
      expect(rejects).toEqual([{ line: 3, stage: 'DataQuality', reason: 'amount is negative' }]);
      const described = job.events.map((e) => `${e.processName}:${e.description}`).join('\n');
      expect(described).toContain('data-quality script (version 1)');
      expect(described).toContain('transformation script (version 1)');
    });

    it('runs the scripts over a file of several batches: every row once, rejects of each stage kept', async () => {
      // 12,000 rows: three batches of the stage thread, the next one converted while the script works.
      const lines = ['id,amount'];
      for (let id = 1; id <= 12_000; id++) {
        const amount = id % 1000 === 7 ? -1 : id % 1000 === 9 ? 'oops' : (id % 50) / 4;
        lines.push(`${id},${amount}`);
      }
      const { job, loaded, rejects } = await load(`${lines.join('\n')}\n`);
      expect(job.rollup.status).toBe('warning');
      expect(loaded).toHaveLength(12_000 - 24);
      expect(loaded.every((r) => Number(r.amount_cents) === Math.round(r.amount * 100))).toBe(true);
      expect(loaded.map((r) => r.id)).toEqual(
        Array.from({ length: 12_000 }, (_, i) => i + 1).filter((id) => id % 1000 !== 7 && id % 1000 !== 9),
      );
      // Line = id + 1 (the header is line 1); DataQuality holds both the type check's and the script's rejects.
      expect(rejects.map((r) => [r.line - 1, r.stage, r.reason.startsWith('amount is negative')])).toEqual(
        Array.from({ length: 12 }, (_, k) => [
          [k * 1000 + 7, 'DataQuality', true],
          [k * 1000 + 9, 'DataQuality', false],
        ]).flat(),
      );
      const described = job.events.map((e) => `${e.processName}:${e.description}`).join('\n');
      expect(described).toContain('12000 rows checked, 24 rejected');
    });

    it('keeps the live script when a new one fails its checks or its dry run, saying why', async () => {
      double.script(reply(DQ_NETWORK), reply(DQ_NETWORK));
      const refused = (await regenerate().expect(200)).body;
      expect(refused).toMatchObject({ status: 'pending', version: 1, script: DQ_V1 });
      expect(refused.pendingReason).toContain('socket');
      // The second attempt carried the reasons back to the model.
      expect(ModelDouble.promptText(double.calls[1])).toContain('socket');

      double.reset();
      double.script(reply(DQ_CRASHES_ON_SAMPLE));
      const crashed = (await regenerate().expect(200)).body;
      expect(crashed).toMatchObject({ status: 'pending', version: 1 });
      expect(crashed.pendingReason).toContain('dry run');
      // The exception's type and place, not its message: a message may quote the sample's rows.
      expect(crashed.pendingReason).toContain('check() raised ValueError');
      expect(crashed.pendingReason).not.toContain('cannot judge');
      expect(crashed.pendingReason).toMatch(/data_quality\.py", line 2, in check/);
      expect(crashed.pendingReason).not.toContain('/tmp');
      // Runs keep the live version.
      const { rejects } = await load('id,amount\n7,-1\n');
      expect(rejects).toEqual([{ line: 2, stage: 'DataQuality', reason: 'amount is negative' }]);
    });

    it('regenerates, lists versions newest first, restores (rules 1-3) and refuses with 400/404/422', async () => {
      double.script(reply(DQ_V2));
      const v2 = (await regenerate().expect(200)).body;
      expect(v2).toMatchObject({ status: 'ready', version: 2, origin: 'regenerate', script: DQ_V2 });
      expect((await versions()).map((v) => [v.version, v.origin])).toEqual([
        [2, 'regenerate'],
        [1, 'run'],
      ]);

      const restored = (await restore(1).expect(200)).body;
      expect(restored).toMatchObject({
        version: 3,
        origin: 'restore-version',
        script: DQ_V1,
        model: 'codegen-1',
      });
      expect(restored.noop).toBeUndefined();
      const { rejects } = await load('id,amount\n8,-2\n');
      expect(rejects[0].reason).toBe('amount is negative');

      const noop = (await restore(3).expect(200)).body;
      expect(noop).toMatchObject({ noop: true, version: 3 });
      expect(await versions()).toHaveLength(3);

      expect((await restore(42).expect(404)).body.message).toContain('no version 42');
      expect((await restore(1, 'cleanup').expect(400)).body.message).toContain(
        "unknown script kind 'cleanup'",
      );
      expect((await restore(1, 'dataQuality', 'nope').expect(404)).body.message).toContain("'nope'");
      expect((await restore('x').expect(400)).body.message).toContain('version');
      expect(double.calls).toHaveLength(1);
    });

    it('refuses (422) a version written for another instruction; nothing changes', async () => {
      const callsBefore = double.calls.length;
      await http()
        .post('/api/v1/pipeline')
        .send(pipelineBody('Reject rows whose amount is negative or above a million.', TF_INSTRUCTION))
        .expect(200);
      // No reply scripted: the model call fails, the entry waits as pending, the live script stays.
      // The entry is pending at once (its script no longer fits) while the background write still
      // tries the model: wait for all three attempts (the client retries twice), or a retry outliving
      // this test would take the reply the next test scripts.
      await waitFor('the background write to give up', async () =>
        double.calls.length >= callsBefore + 3 ? true : null,
      );
      const pending = await waitFor('pending after the instruction changed', async () => {
        const e = (await entries()).dataQuality;
        return e.status === 'pending' ? e : null;
      });
      expect(pending.version).toBe(3);
      const res = await restore(2).expect(422);
      expect(res.body.message).toContain('different instruction');
      expect((await versions())[0].version).toBe(3);
      await http().post('/api/v1/pipeline').send(pipelineBody(DQ_INSTRUCTION, TF_INSTRUCTION)).expect(200);
      await waitFor('ready again', async () =>
        (await entries()).dataQuality.status === 'ready' ? true : null,
      );
    });

    it('a script that fails on a batch ends the stage error with its own frames', async () => {
      double.script(reply(DQ_CRASHES_ON_999));
      expect((await regenerate().expect(200)).body).toMatchObject({ status: 'ready', version: 4 });
      const { job, loaded } = await load('id,amount\n1,1\n999,2\n');
      expect(job.rollup.status).toBe('error');
      const err = job.rollup.jobs[0].lastError!;
      expect(err.processName).toBe('DataQuality');
      expect(err.description).toContain('RuntimeError: row 999 is cursed');
      expect(err.description).toMatch(/data_quality\.py", line 5, in check/);
      expect(err.description).not.toContain('_tapyard');
      expect(loaded).toEqual([]);
      await restore(3).expect(200);
    });

    it('the sandbox holds where the static checks can be evaded: a script reaches no network', async () => {
      // `random._os` is plain attribute access the checks allow; from there a script gets at anything in
      // Python. What stops it is the sandbox: a network namespace of its own, with nothing in it.
      const listener = createServer((socket) => {
        reached++;
        socket.destroy();
      });
      let reached = 0;
      await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
      const port = (listener.address() as AddressInfo).port;
      const EVASIVE = `import random

def check(rows):
    b = random._os.sys.modules["builtins"]
    socket = b.getattr(b, "__im" + "port__")("socket")
    out = []
    for r in rows:
        try:
            socket.create_connection(("127.0.0.1", ${port}), timeout=2).close()
            out.append("reached the host")
        except OSError as e:
            out.append("blocked: " + type(e).__name__)
    return out
`;
      try {
        double.script(reply(EVASIVE));
        expect((await regenerate().expect(200)).body).toMatchObject({ status: 'ready', script: EVASIVE });
        const { rejects } = await load('id,amount\n1,1\n');
        expect(rejects).toEqual([
          { line: 2, stage: 'DataQuality', reason: expect.stringMatching(/^blocked: /) },
        ]);
        expect(reached).toBe(0);
      } finally {
        listener.close();
      }
      await restore(3).expect(200);
    });

    it('needs pipeline:update to restore and audits the restore', async () => {
      const admin = newBootstrapKey();
      const keyed = await startApi({
        TAPYARD_ENV: env,
        ...TEST_OBJECT_STORE,
        TAP_EGRESS_ALLOW: double.address,
        USE_API_KEYS: 'true',
        TAPYARD_BOOTSTRAP_API_KEY: admin,
      });
      try {
        const reader = await issueKey(keyed.http, admin, 'codegen-reader', {
          capabilities: ['pipeline:read', 'assistant:run'],
        });
        const path = '/api/v1/pipelines/sales/codegen-scripts/dataQuality/versions/1/restore';
        const denied = await keyed.http.post(path).set('x-api-key', reader).expect(403);
        expect(denied.body.message).toContain('pipeline:update');
        await keyed.http.get('/api/v1/pipelines/sales/codegen-scripts').set('x-api-key', reader).expect(200);
        await keyed.http.post(path).set('x-api-key', admin).expect(200);
        const audit = () => keyed.logs.parsed().filter((l) => l.msg === 'audit');
        expect(audit()).toContainEqual(
          expect.objectContaining({
            event: 'codegen-script-restore-version:dataQuality',
            key: 'bootstrap',
            pipeline: 'sales',
            outcome: 'noop',
          }),
        );

        // The assistant's tool is the same action (pipeline:update:codegen-scripts), checked and audited alike.
        // A restore acts: the assistant proposes it (pending_action) and it runs once the user confirms.
        const viaAssistant = async (key: string): Promise<{ proposed: string; confirmed: string | null }> => {
          double.script(
            {
              toolCalls: [
                {
                  name: 'restore_codegen_script_version',
                  arguments: { pipeline: 'sales', kind: 'dataQuality', version: 2 },
                },
              ],
            },
            { text: 'done' },
          );
          const chat = async (body: Record<string, unknown>): Promise<string> => {
            const res = await keyed.http
              .post('/api/v1/assistant/chat')
              .set('x-api-key', key)
              .send(body)
              .buffer(true)
              .parse((r, done) => {
                let text = '';
                r.on('data', (c: Buffer) => (text += c.toString()));
                r.on('end', () => done(null, text));
              })
              .expect(200);
            return res.body as string;
          };
          const proposed = await chat({
            messages: [{ content: 'restore version 2 of the data-quality script' }],
          });
          const pending = /event: pending_action\ndata: (.*)\n/.exec(proposed);
          if (!pending) return { proposed, confirmed: null };
          const { actionId, conversationId } = JSON.parse(pending[1]) as Record<string, string>;
          return {
            proposed,
            confirmed: await chat({ messages: [{ content: 'yes' }], conversationId, confirm: actionId }),
          };
        };
        const refused = await viaAssistant(reader);
        expect(refused.proposed).toContain('event: tool_result');
        expect(refused.proposed).toContain('pipeline:update');
        expect(refused.confirmed).toBeNull();
        const before = (await entries()).dataQuality.version;
        const { proposed, confirmed } = await viaAssistant(admin);
        expect(proposed).toContain('"stopReason":"complete","awaitingConfirmation":1');
        expect(confirmed).toContain('"origin":"restore-version"');
        expect((await entries()).dataQuality).toMatchObject({ version: before + 1, script: DQ_V2 });
        expect(audit()).toContainEqual(
          expect.objectContaining({
            event: 'codegen-script-restore-version:dataQuality',
            key: 'bootstrap',
            version: 2,
          }),
        );
        await restore(1).expect(200);
      } finally {
        await keyed.close();
      }
    });

    it('says when the codegen model setting changed since a script was written', async () => {
      const secret = { provider: 'openai-compatible', baseUrl: double.openaiUrl, model: 'base-1' };
      await http()
        .put('/api/v1/secrets/ai')
        .send({ ...secret, 'model.codegen': 'codegen-2' })
        .expect(200);
      expect((await entries()).dataQuality).toMatchObject({ model: 'codegen-1', modelIsCurrent: false });
      await http()
        .put('/api/v1/secrets/ai')
        .send({ ...secret, 'model.codegen': 'codegen-1' })
        .expect(200);
      expect((await entries()).dataQuality.modelIsCurrent).toBe(true);
    });

    it('numbers a script stored before versioning as 1 on the first history read', async () => {
      const seen = double.calls.length;
      await http()
        .post('/api/v1/pipeline')
        .send({ ...pipelineBody(DQ_INSTRUCTION, null), name: 'legacy' })
        .expect(200);
      // The save writes a script in the background: with no reply scripted, its call and the client's two
      // retries fail. Waited for, so none of them takes a reply a later test scripts for itself.
      await until("the save's script attempts to end", () => double.calls.length >= seen + 3);
      await pg.query(
        `INSERT INTO tapyard.codegen_scripts (environment, pipeline, kind, contract_version, storage, object_key, origin, model)
         SELECT environment, 'legacy', kind, contract_version, storage, object_key, origin, model
           FROM tapyard.codegen_scripts WHERE environment = $1 AND pipeline = 'sales' AND kind = 'dataQuality'
         ON CONFLICT (environment, pipeline, kind) DO UPDATE SET version = NULL, object_key = EXCLUDED.object_key,
           pending_reason = NULL`,
        [env],
      );
      const before = (await entries('legacy')).dataQuality;
      expect(before.version).toBeUndefined();
      expect(before.script).not.toBeNull();
      expect((await versions('dataQuality', 'legacy')).map((v) => v.version)).toEqual([1]);
      expect((await entries('legacy')).dataQuality.version).toBe(1);
      // A kind the pipeline has no instruction for: 400 naming the field, for every write.
      const none = await restore(1, 'transformation', 'legacy').expect(400);
      expect(none.body.message).toContain('has no transformation.aiInstruction');
      await http().post('/api/v1/pipelines/legacy/codegen-scripts/transformation/regenerate').expect(400);
      await http().post('/api/v1/pipelines/legacy/codegen-scripts/transformation/pull').expect(400);
      expect((await entries('legacy')).transformation).toBeNull();
    });

    describe('in a code repository', () => {
      let sha1: string;
      beforeAll(async () => {
        await http()
          .put('/api/v1/secrets/code-repository')
          .send({
            url: git.url('scripts.git'),
            branch: 'main',
            token: 'git-token-not-to-be-seen',
            pathPrefix: 'etl',
          })
          .expect(200);
      });

      it('commits a regenerated script and runs the recorded commit; drift, then pull adopts the edit', async () => {
        double.script(reply(DQ_V2));
        const e = (await regenerate().expect(200)).body;
        expect(e).toMatchObject({
          storage: 'github',
          repoPath: 'etl/pipelines/sales/data-quality.py',
          drift: false,
          conflict: false,
          script: DQ_V2,
        });
        sha1 = e.commitSha;
        expect(sha1).toBe(await git.headOf('scripts.git', 'main'));
        expect(JSON.stringify(e)).not.toContain('git-token-not-to-be-seen');

        const edit = await git.pushFile(
          'scripts.git',
          'main',
          'etl/pipelines/sales/data-quality.py',
          DQ_HUMAN,
          'tune',
        );
        const drifted = (await entries()).dataQuality;
        expect(drifted).toMatchObject({ drift: true, headSha: edit, commitSha: sha1, script: DQ_V2 });
        // Runs execute the recorded commit, not the head.
        expect((await load('id,amount\n1,-1\n')).rejects[0].reason).toBe('amount below zero');

        const pulled = (
          await http().post('/api/v1/pipelines/sales/codegen-scripts/dataQuality/pull').expect(200)
        ).body;
        expect(pulled).toMatchObject({
          origin: 'repository',
          commitSha: edit,
          drift: false,
          script: DQ_HUMAN,
        });
        expect(pulled.headSha).toBeUndefined();
        expect((await load('id,amount\n1,-1\n')).rejects[0].reason).toBe(
          'negative amount (edited by a person)',
        );
      });

      it('does not commit over an edit (conflict), refuses a restore with 409, and overwrite=true resolves it', async () => {
        const before = (await entries()).dataQuality;
        const edit = await git.pushFile(
          'scripts.git',
          'main',
          'etl/pipelines/sales/data-quality.py',
          DQ_HUMAN_2,
          'again',
        );
        double.script(reply(DQ_V1));
        const conflicted = (await regenerate().expect(200)).body;
        expect(conflicted).toMatchObject({
          conflict: true,
          commitSha: before.commitSha,
          version: before.version,
        });
        expect(conflicted.conflictReason).toContain('edited in the code repository');
        expect(await git.headOf('scripts.git', 'main')).toBe(edit);
        // Runs keep the recorded commit, with no model call.
        double.reset();
        expect((await load('id,amount\n1,-1\n')).rejects[0].reason).toBe(
          'negative amount (edited by a person)',
        );
        expect(double.calls).toHaveLength(0);

        const refused = await restore(1).expect(409);
        expect(refused.body.message).toContain('edited in the code repository');
        expect((await entries()).dataQuality.version).toBe(before.version);
        expect(await git.headOf('scripts.git', 'main')).toBe(edit);

        double.script(reply(DQ_V1));
        const forced = (await regenerate('dataQuality', true).expect(200)).body;
        expect(forced).toMatchObject({ conflict: false, script: DQ_V1, origin: 'regenerate' });
        expect(forced.commitSha).toBe(await git.headOf('scripts.git', 'main'));
        expect(forced.commitSha).not.toBe(edit);
      });

      it('restores as a new commit; 502 with nothing changed when the repository is unreachable', async () => {
        const live = (await entries()).dataQuality;
        const restored = (await restore(2).expect(200)).body;
        expect(restored).toMatchObject({
          origin: 'restore-version',
          script: DQ_V2,
          version: live.version + 1,
        });
        expect(restored.commitSha).toBe(await git.headOf('scripts.git', 'main'));

        await http()
          .put('/api/v1/secrets/code-repository')
          .send({
            url: git.url('scripts.git'),
            branch: 'main',
            token: 'a-wrong-token-value',
            pathPrefix: 'etl',
          })
          .expect(200);
        const failed = await restore(1).expect(502);
        expect(failed.body.message).not.toContain('a-wrong-token-value');
        await http()
          .put('/api/v1/secrets/code-repository')
          .send({
            url: git.url('scripts.git'),
            branch: 'main',
            token: 'git-token-not-to-be-seen',
            pathPrefix: 'etl',
          })
          .expect(200);
        expect((await entries()).dataQuality).toMatchObject({
          version: restored.version,
          commitSha: restored.commitSha,
        });
      });

      it('reaches a private git remote only when the operator allows it (CODE_REPOSITORY_ALLOW)', async () => {
        const strict = await startApi({ TAPYARD_ENV: env, ...TEST_OBJECT_STORE });
        try {
          const served = git.requests;
          const res = await strict.http
            .post('/api/v1/pipelines/sales/codegen-scripts/dataQuality/versions/1/restore')
            .expect(502);
          expect(res.body.message).toContain('refused by the egress policy');
          expect(res.body.message).toContain('CODE_REPOSITORY_ALLOW');
          const migrate = await strict.http
            .post('/api/v1/tap/migrate-storage')
            .send({ tapName: 'nobody' })
            .expect(404);
          expect(migrate.body.message).toContain("'nobody'");
          expect(git.requests).toBe(served);
        } finally {
          await strict.close();
        }
      });

      it('pull: nothing to adopt leaves the entry; a file breaking the contract is refused (422); 400 off the repository', async () => {
        const pull = (p = 'sales') => http().post(`/api/v1/pipelines/${p}/codegen-scripts/dataQuality/pull`);
        const live = (await entries()).dataQuality;
        expect((await pull().expect(200)).body).toMatchObject({
          version: live.version,
          commitSha: live.commitSha,
        });

        const path = 'etl/pipelines/sales/data-quality.py';
        const bad = await git.pushFile('scripts.git', 'main', path, DQ_NETWORK, 'bad');
        const refused = await pull().expect(422);
        expect(refused.body.message).toContain('socket');
        expect((await entries()).dataQuality).toMatchObject({
          version: live.version,
          drift: true,
          headSha: bad,
        });

        await git.pushFile('scripts.git', 'main', path, live.script, 'undo');
        expect((await pull().expect(200)).body).toMatchObject({ version: live.version, drift: false });
        const minio = await pull('legacy').expect(400);
        expect(minio.body.message).toContain('not stored in a code repository');
      });

      it('moves a tap script into the repository and back; runs use the commit; idempotent', async () => {
        await http().post('/api/v1/tap').send({ name: 'mover', script: TAP_SCRIPT }).expect(200);
        const first = (await http().get('/api/v1/tap').query({ name: 'mover' }).expect(200)).body;
        const out = (await http().post('/api/v1/tap/migrate-storage').send({ tapName: 'mover' }).expect(200))
          .body;
        expect(out).toMatchObject({
          tapName: 'mover',
          storage: 'github',
          repoPath: 'etl/taps/mover.py',
          scriptPath: first.scriptPath,
          migrated: true,
        });
        expect(out.commitSha).toBe(await git.headOf('scripts.git', 'main'));
        const again = (
          await http()
            .post('/api/v1/tap/migrate-storage')
            .send({ tapName: 'mover', target: 'github' })
            .expect(200)
        ).body;
        expect(again).toEqual({ ...out, migrated: false });
        const run = (await http().post('/api/v1/tap/run').send({ name: 'mover', mode: 'test' }).expect(200))
          .body;
        expect(run.recordCount).toBe(2);

        // An edit in the repository is not run until it is the recorded commit.
        await git.pushFile(
          'scripts.git',
          'main',
          'etl/taps/mover.py',
          'def fetch():\n    return [{"id": 9}]\n',
          'x',
        );
        expect(
          (await http().post('/api/v1/tap/run').send({ name: 'mover', mode: 'test' }).expect(200)).body
            .recordCount,
        ).toBe(2);

        const back = (await http().post('/api/v1/tap/migrate-storage').send({ tapName: 'mover' }).expect(200))
          .body;
        expect(back).toMatchObject({ storage: 'minio', repoPath: null, commitSha: null, migrated: true });
        expect(back.scriptPath).not.toBe(first.scriptPath);
        const tap = (await http().get('/api/v1/tap').query({ name: 'mover' }).expect(200)).body;
        expect(tap.script).toBe(TAP_SCRIPT);
        await http()
          .post('/api/v1/tap/migrate-storage')
          .send({ tapName: 'mover', target: 'gitlab' })
          .expect(400);

        // Each move opened a tap incident (issue 28 item 8); the same script both ways passes.
        let incidents: { summary: string; verdict: string }[] = [];
        for (let i = 0; i < 600; i++) {
          incidents = (await http().get('/api/v1/incidents').query({ tap: 'mover' }).expect(200)).body;
          if (incidents.length === 2 && incidents.every((x) => x.verdict !== 'pending')) break;
          await new Promise((r) => setTimeout(r, 100));
        }
        expect(incidents.map((x) => [x.summary.replace(/:.*/, ''), x.verdict])).toEqual([
          ["tap 'mover' script 1 → 2 (migrate)", 'pass'],
          ["tap 'mover' script 1 → 1 (migrate)", 'pass'],
        ]);
      });
    });
  });
});
