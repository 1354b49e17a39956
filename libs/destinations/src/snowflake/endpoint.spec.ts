import { IncomingMessage, Server, createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { TapyardConfig, ValidationError } from '@tapyard/core';
import { EgressPolicy } from '@tapyard/egress';
import type { SecretsService } from '@tapyard/secrets';
import { DestinationErrorCode } from '../destination-errors';
import { LoadTarget } from '../destination';
import { SinkLedger } from '../sinks/sink-ledger';
import { SNOWFLAKE_DOMAINS, snowflakeEndpoint } from './endpoint';
import { SnowflakeDestination } from './snowflake.destination';

const FIELDS = {
  account: 'acme',
  user: 'u',
  password: 'pw',
  warehouse: 'wh',
  database: 'db',
  schema: 'public',
};
const nothingAllowed = () => false;

function refusal(run: () => unknown): ValidationError {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationError);
    return err as ValidationError;
  }
  throw new Error('not refused');
}

describe('the Snowflake endpoint of a secret', () => {
  it("recognises the domains the driver itself recognises as Snowflake's", () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const driver = require('snowflake-sdk/dist/lib/url_util') as { SNOWFLAKE_DOMAINS: string[] };
    expect([...SNOWFLAKE_DOMAINS].sort()).toEqual([...driver.SNOWFLAKE_DOMAINS].sort());
  });

  it.each([
    ['https://acme-prod.snowflakecomputing.com', 'acme-prod.snowflakecomputing.com', 443],
    [
      'https://XY12345.eu-west-1.aws.snowflakecomputing.com/',
      'xy12345.eu-west-1.aws.snowflakecomputing.com',
      443,
    ],
    [
      'https://acme-prod.privatelink.snowflakecomputing.com',
      'acme-prod.privatelink.snowflakecomputing.com',
      443,
    ],
    ['https://xy12345.cn-north-1.snowflakecomputing.cn:443', 'xy12345.cn-north-1.snowflakecomputing.cn', 443],
    ['https://acme.snowflakecomputing.com.', 'acme.snowflakecomputing.com', 443],
  ])('takes the account URL %s', (accessUrl, host, port) => {
    const e = snowflakeEndpoint({ ...FIELDS, accessUrl }, nothingAllowed, 'sf');
    expect(e).toMatchObject({ host, port });
  });

  it('builds the host from the account as the driver does', () => {
    const host = (account: string) => snowflakeEndpoint({ ...FIELDS, account }, nothingAllowed, 'sf').host;
    expect(host('acme')).toBe('acme.snowflakecomputing.com');
    expect(host('xy12345.eu-west-1.aws')).toBe('xy12345.eu-west-1.aws.snowflakecomputing.com');
    expect(host('xy12345.us-west-2')).toBe('xy12345.snowflakecomputing.com');
    expect(host('xy12345.cn-north-1')).toBe('xy12345.cn-north-1.snowflakecomputing.cn');
  });

  it.each([
    'https://warehouse.attacker.example',
    'https://snowflakecomputing.com',
    'https://acme.snowflakecomputing.com.attacker.example',
    'https://acmesnowflakecomputing.com',
    'https://8.8.8.8',
    'http://acme.snowflakecomputing.com',
    'https://acme.snowflakecomputing.com@attacker.example',
    'https://attacker.example\\@acme.snowflakecomputing.com',
    'https://attacker.example/acme.snowflakecomputing.com',
    'https://attacker.example#acme.snowflakecomputing.com',
    'https://attacker.example?.snowflakecomputing.com',
    'https://u:p@acme.snowflakecomputing.com',
    'ftp://acme.snowflakecomputing.com',
    'https://acme.snowflakecomputing.com:0',
  ])('refuses %s, naming accessUrl', (accessUrl) => {
    const err = refusal(() => snowflakeEndpoint({ ...FIELDS, accessUrl }, nothingAllowed, 'sf'));
    expect(err.domainCode).toBe(DestinationErrorCode.EndpointRefused);
    expect(err.details).toEqual([{ field: 'accessUrl', problem: expect.any(String) }]);
    expect(err.message).toMatch(/^secret 'sf': accessUrl /);
  });

  it.each(['attacker.example/x', 'acme#', 'a@b', 'acme..x', ''])(
    'refuses the account %p, which would change the host the driver builds',
    (account) => {
      const err = refusal(() => snowflakeEndpoint({ ...FIELDS, account }, nothingAllowed, 'sf'));
      expect(err.domainCode).toBe(DestinationErrorCode.InvalidSecret);
      expect(err.details).toEqual([{ field: 'account', problem: expect.any(String) }]);
    },
  );

  it('takes the exact endpoint an operator allow-listed (a stand-in), over http too, and no other port', () => {
    const policy = new EgressPolicy([{ host: '127.0.0.1', port: 8090 }]);
    const allowed = (h: string, p: number) => policy.isAllowListed(h, p);
    expect(snowflakeEndpoint({ ...FIELDS, accessUrl: 'http://127.0.0.1:8090' }, allowed, 'sf')).toEqual({
      accessUrl: 'http://127.0.0.1:8090',
      where: '127.0.0.1:8090',
      host: '127.0.0.1',
      port: 8090,
    });
    const other = refusal(() =>
      snowflakeEndpoint({ ...FIELDS, accessUrl: 'http://127.0.0.1:8091' }, allowed, 'sf'),
    );
    expect(other.message).toContain('TAP_EGRESS_ALLOW=127.0.0.1:8091');
    // The secret's environment: the entry suggested is scoped to it.
    const scoped = refusal(() =>
      snowflakeEndpoint({ ...FIELDS, accessUrl: 'http://127.0.0.1:8091' }, allowed, 'sf', 'acme'),
    );
    expect(scoped.message).toContain('TAP_EGRESS_ALLOW=acme=127.0.0.1:8091');
  });
});

/**
 * A loopback server standing in for a warehouse server that is not Snowflake's: reachable under the
 * test's policy (every loopback address, as any public address is), but never allow-listed by endpoint.
 */
async function foreignWarehouse(): Promise<{ server: Server; port: number; seen: string[] }> {
  const seen: string[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    seen.push(`${req.method} ${req.url}`);
    req.resume();
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ success: false, message: 'no', code: '390100', data: null }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port, seen };
}

describe('SnowflakeDestination at load time', () => {
  let warehouse: Awaited<ReturnType<typeof foreignWarehouse>>;
  beforeAll(async () => {
    warehouse = await foreignWarehouse();
  });
  afterAll(async () => {
    await new Promise((r) => warehouse.server.close(r));
  });

  function loader(fields: Record<string, string>, policy: EgressPolicy): SnowflakeDestination {
    const config = { sinks: { requestTimeoutMs: 5000, loadTimeoutMs: 10_000 }, egressAllow: [] };
    const secrets = { reveal: async () => fields } as unknown as SecretsService;
    return new (class extends SnowflakeDestination {
      protected override egressPolicy(): EgressPolicy {
        return policy;
      }
    })(config as unknown as TapyardConfig, secrets, {} as SinkLedger);
  }
  const target: LoadTarget = {
    environment: 'dev',
    pipeline: 'p',
    pipelineToken: 't',
    columns: [],
    destination: { snowflake: { secretName: 'sf', table: 'T' } },
  };

  it('refuses a server that is not Snowflake, naming accessUrl, before the driver sends it anything', async () => {
    // The address passes the policy (as a public host would): only the rule on the host refuses it.
    const policy = new EgressPolicy({ endpoints: [], hosts: [], ranges: [{ range: '127.0.0.0/8' }] });
    const accessUrl = `http://127.0.0.1:${warehouse.port}`;
    const err = await loader({ ...FIELDS, accessUrl }, policy)
      .probe(target)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).domainCode).toBe(DestinationErrorCode.EndpointRefused);
    expect((err as ValidationError).message).toMatch(/accessUrl .*not a Snowflake account host/);
    expect(warehouse.seen).toEqual([]);
  });

  it('reaches the endpoint an operator allow-listed', async () => {
    const policy = new EgressPolicy([{ host: '127.0.0.1', port: warehouse.port }]);
    const accessUrl = `http://127.0.0.1:${warehouse.port}`;
    await expect(loader({ ...FIELDS, accessUrl }, policy).probe(target)).rejects.toThrow(/Snowflake/);
    expect(warehouse.seen.some((s) => s.startsWith('POST /session/v1/login-request'))).toBe(true);
  });
});
