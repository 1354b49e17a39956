import { BlockList, isIP } from 'node:net';

/**
 * Address ranges no caller-controlled connection may reach unless the operator allowed the endpoint:
 * the host itself, private networks, link-local (cloud metadata at 169.254.169.254 and fd00:ec2::254),
 * carrier-grade NAT, documentation, benchmarking, multicast and reserved space, and the IPv6 forms that
 * embed an IPv4 address (IPv4-translated, NAT64, 6to4, Teredo) so those cannot smuggle a private one through.
 * They are blocked whole, public embedded addresses too: a translator could sit anywhere on the path.
 * IPv4-mapped addresses (`::ffff:0:0/96`) are not listed: BlockList judges them by their IPv4 part, and a
 * `::ffff:0:0/96` rule would match every plain IPv4 address as well.
 */
const IPV4: readonly [string, number][] = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];
const IPV6: readonly [string, number][] = [
  ['::', 128],
  ['::1', 128],
  ['::', 96], // IPv4-compatible (deprecated)
  ['::ffff:0:0:0', 96], // IPv4-translated (RFC 2765 SIIT): ::ffff:0:a.b.c.d
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 32],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
];

const blocked = new BlockList();
for (const [net, prefix] of IPV4) blocked.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of IPV6) blocked.addSubnet(net, prefix, 'ipv6');

/**
 * Whether an IP address is on the public internet. IPv4-mapped IPv6 addresses (`::ffff:10.0.0.1`) are
 * judged by their IPv4 part. Anything that is not an IP address is not public.
 */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return !blocked.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

/** Whether an IP address is this host's loopback (`127.0.0.0/8`, `::1`, and their IPv4-mapped forms). */
export function isLoopbackAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return loopback.check(address, family === 4 ? 'ipv4' : 'ipv6');
}
