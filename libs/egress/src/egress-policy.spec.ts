import fc from 'fast-check';
import { isPublicAddress } from './addresses';
import { parseAllowList, parseEndpoints } from '@tapyard/core';
import { EgressPolicy, EgressRefused, Resolver } from './egress-policy';

const octet = fc.integer({ min: 0, max: 255 });
const v4 = (a: number, b: number, c: number, d: number): string => `${a}.${b}.${c}.${d}`;

/** `10.0.0.1` → `a00:1`: the last two IPv6 groups of an embedded IPv4 address. */
const hex = (address: string): string => {
  const [a, b, c, d] = address.split('.').map(Number);
  return `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
};

describe('isPublicAddress', () => {
  it.each([
    '127.0.0.1',
    '127.255.255.254',
    '0.0.0.0',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254', // cloud metadata
    '100.64.0.1',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    '::ffff:a9fe:a9fe', // 169.254.169.254, mapped, in hex
    '::ffff:0:7f00:1', // 127.0.0.1, IPv4-translated (SIIT)
    '::ffff:0:8.8.8.8', // translated, even of a public address
    'fd00:ec2::254', // AWS metadata over IPv6
    'fe80::1',
    'fc00::1',
    '64:ff9b::a00:1', // NAT64 of 10.0.0.1
    '2002:a00:1::1', // 6to4 of 10.0.0.1
    'ff02::1',
    'not-an-ip',
  ])('refuses %s', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each([
    '1.1.1.1',
    '8.8.8.8',
    '::ffff:8.8.8.8',
    '172.15.255.255',
    '172.32.0.1',
    '192.169.0.1',
    '2606:4700::1111',
  ])('allows %s', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });

  it('refuses every address of the private IPv4 ranges, also written as IPv4-mapped, -translated or NAT64 IPv6', () => {
    const privateV4 = fc.oneof(
      fc.tuple(octet, octet, octet).map(([b, c, d]) => v4(10, b, c, d)),
      fc.tuple(octet, octet, octet).map(([b, c, d]) => v4(127, b, c, d)),
      fc.tuple(fc.integer({ min: 16, max: 31 }), octet, octet).map(([b, c, d]) => v4(172, b, c, d)),
      fc.tuple(octet, octet).map(([c, d]) => v4(192, 168, c, d)),
      fc.tuple(octet, octet).map(([c, d]) => v4(169, 254, c, d)),
    );
    fc.assert(
      fc.property(privateV4, (address) => {
        expect(isPublicAddress(address)).toBe(false);
        expect(isPublicAddress(`::ffff:${address}`)).toBe(false);
        expect(isPublicAddress(`::ffff:0:${address}`)).toBe(false);
        expect(isPublicAddress(`64:ff9b::${address}`)).toBe(false);
        expect(isPublicAddress(`0:0:0:0:0:ffff:${hex(address)}`)).toBe(false);
        expect(isPublicAddress(`0:0:0:0:ffff:0:${hex(address)}`)).toBe(false);
      }),
    );
  });
});

describe('EgressPolicy', () => {
  const answers =
    (...addresses: string[]): Resolver =>
    () =>
      Promise.resolve(addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));

  it('permits a public name and hands back the address it checked', async () => {
    const policy = new EgressPolicy([], answers('93.184.216.34'));
    await expect(policy.check('Example.COM.', 443)).resolves.toEqual({
      address: '93.184.216.34',
      family: 4,
      allowListed: false,
    });
  });

  it('refuses a name when any of its addresses is private (DNS rebinding)', async () => {
    let lookups = 0;
    const rebinding: Resolver = () => {
      lookups += 1;
      return answers('93.184.216.34', '127.0.0.1')('x');
    };
    const policy = new EgressPolicy([], rebinding);
    await expect(policy.check('rebind.example', 80)).rejects.toThrow(
      'connection to rebind.example:80 refused by the egress policy: it resolves to 127.0.0.1, which is a ' +
        'loopback, private, link-local or reserved address (an operator may allow it with ' +
        'TAP_EGRESS_ALLOW=rebind.example:80)',
    );
    expect(lookups).toBe(1);
  });

  it('refuses literal private addresses, the metadata service and names that do not resolve', async () => {
    const policy = new EgressPolicy([], () => Promise.reject(new Error('ENOTFOUND')));
    await expect(policy.check('169.254.169.254', 80)).rejects.toBeInstanceOf(EgressRefused);
    await expect(policy.check('[::1]', 8080)).rejects.toThrow(/TAP_EGRESS_ALLOW=\[::1\]:8080/);
    await expect(policy.check('nowhere.invalid', 443)).rejects.toThrow(/does not resolve \(ENOTFOUND\)/);
    await expect(policy.check('1.1.1.1', 0)).rejects.toThrow(/port is not valid/);
  });

  it('lets allow-listed host:port pairs through, and only those ports', async () => {
    const policy = new EgressPolicy([{ host: 'db.internal', port: 5432 }], answers('10.0.0.5'));
    await expect(policy.check('DB.internal', 5432)).resolves.toMatchObject({
      address: '10.0.0.5',
      allowListed: true,
    });
    await expect(policy.check('db.internal', 22)).rejects.toBeInstanceOf(EgressRefused);
  });
});

describe('EgressPolicy: entries scoped to an environment', () => {
  const resolver: Resolver = (host) =>
    Promise.resolve([{ address: host === 'db.acme.internal' ? '10.0.0.7' : '10.9.9.9', family: 4 }]);
  const endpoints = parseEndpoints('acme=10.0.0.5:5432, 127.0.0.1:8090');
  if (typeof endpoints === 'string') throw new Error(endpoints);
  const platform = new EgressPolicy(endpoints, resolver);

  it("allows a scoped endpoint for its environment's work only, naming the scoped entry in refusals", async () => {
    await expect(platform.for('acme').check('10.0.0.5', 5432)).resolves.toMatchObject({ allowListed: true });
    expect(platform.for('acme').isAllowListed('10.0.0.5', 5432)).toBe(true);
    expect(platform.for('globex').isAllowListed('10.0.0.5', 5432)).toBe(false);
    await expect(platform.for('globex').check('10.0.0.5', 5432)).rejects.toThrow(
      'connection to 10.0.0.5:5432 refused by the egress policy: it is a loopback, private, link-local or ' +
        "reserved address (an operator may allow it for environment 'globex' with " +
        'TAP_EGRESS_ALLOW=globex=10.0.0.5:5432)',
    );
    // A check that names no environment never matches a scoped entry.
    await expect(platform.check('10.0.0.5', 5432)).rejects.toThrow(/TAP_EGRESS_ALLOW=10\.0\.0\.5:5432\)/);
    expect(platform.isAllowListed('10.0.0.5', 5432)).toBe(false);
  });

  it('allows an unscoped endpoint for every environment, as before', async () => {
    for (const policy of [platform, platform.for('acme'), platform.for('globex')]) {
      await expect(policy.check('127.0.0.1', 8090)).resolves.toMatchObject({ allowListed: true });
    }
  });

  it('scopes hosts and ranges of an allow-list alike, naming its own setting', async () => {
    const list = parseAllowList('acme=db.acme.internal, acme=10.1.0.0/16, 10.2.0.0/16');
    if (typeof list === 'string') throw new Error(list);
    const rest = new EgressPolicy(list, resolver, 'REST_SINK_ALLOW');
    await expect(rest.for('acme').check('db.acme.internal', 5432)).resolves.toMatchObject({
      allowListed: true,
    });
    await expect(rest.for('acme').check('10.1.2.3', 443)).resolves.toMatchObject({ allowListed: true });
    await expect(rest.for('globex').check('db.acme.internal', 5432)).rejects.toThrow(
      /REST_SINK_ALLOW=globex=db\.acme\.internal:5432/,
    );
    await expect(rest.for('globex').check('10.1.2.3', 443)).rejects.toBeInstanceOf(EgressRefused);
    await expect(rest.check('10.1.2.3', 443)).rejects.toBeInstanceOf(EgressRefused);
    await expect(rest.for('globex').check('10.2.0.1', 443)).resolves.toMatchObject({ allowListed: true });
  });
});

describe('parseEndpoints', () => {
  it('reads host:port lists, IPv6 in brackets', () => {
    expect(parseEndpoints(' api.local:443, 10.0.0.5:5432 ,[fd00::5]:8080,')).toEqual([
      { host: 'api.local', port: 443 },
      { host: '10.0.0.5', port: 5432 },
      { host: 'fd00::5', port: 8080 },
    ]);
  });

  it.each(['api.local', 'api.local:0', 'api.local:70000', 'http://x:80', 'fd00::5:80'])(
    'names the bad entry %s',
    (entry) => {
      expect(parseEndpoints(`ok.local:1,${entry}`)).toBe(`'${entry}' is not host:port`);
    },
  );

  it('reads entries scoped to an environment', () => {
    expect(parseEndpoints('acme=10.0.0.5:5432,t_2-b = [fd00::5]:80')).toEqual([
      { host: '10.0.0.5', port: 5432, environment: 'acme' },
      { host: 'fd00::5', port: 80, environment: 't_2-b' },
    ]);
  });

  it.each([
    ['=10.0.0.5:5432', 'does not start with an environment name'],
    ['Acme=10.0.0.5:5432', 'does not start with an environment name'],
    ['1acme=10.0.0.5:5432', 'does not start with an environment name'],
    [`${'a'.repeat(41)}=10.0.0.5:5432`, 'does not start with an environment name'],
    ['acme=', 'is not host:port'],
    ['acme=b=10.0.0.5:5432', 'is not host:port'],
  ])('refuses the scoped entry %s', (entry, problem) => {
    expect(parseEndpoints(`ok.local:1,${entry}`)).toContain(`'${entry}' ${problem}`);
    expect(parseAllowList(`ok.local,${entry}`)).toEqual(expect.any(String));
  });
});
