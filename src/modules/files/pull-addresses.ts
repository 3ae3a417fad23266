/**
 * Which addresses `POST /files/pull` may connect to (docs/reference/files-and-sftp.md): public ones
 * only. Refused: loopback, private (RFC 1918, CGNAT 100.64/10, ULA fc00::/7),
 * link-local (169.254/16, fe80::/10), unspecified, multicast, reserved
 * (240/4, benchmarking 198.18/15, IETF 192.0.0/24, site-local fec0::/10,
 * discard 100::/64) and every address of this machine's interfaces. IPv4
 * written inside IPv6 (mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96, 6to4
 * 2002::/16) is judged by its IPv4 address. The documentation ranges
 * (TEST-NET-1/2/3, 2001:db8::/32) stay allowed: they route nowhere on the
 * Internet, and the tests reach a peer in 198.51.100.0/24.
 */
import net from 'node:net';
import os from 'node:os';

const V4_BLOCKED: readonly [string, number][] = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];

const V6_BLOCKED: readonly [string, number][] = [
  ['::', 128],
  ['::1', 128],
  ['100::', 64],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
];

const BLOCKED = new net.BlockList();
for (const [address, prefix] of V4_BLOCKED) BLOCKED.addSubnet(address, prefix, 'ipv4');
for (const [address, prefix] of V6_BLOCKED) BLOCKED.addSubnet(address, prefix, 'ipv6');

/** The 16 bytes of an IPv6 address (`::` expanded, a dotted IPv4 tail read). */
function ipv6Bytes(address: string): number[] {
  let text = address.toLowerCase().split('%')[0]!;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split('.').map(Number) as [number, number, number, number];
    text = text.slice(0, -dotted[1]!.length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? (text.split('::') as [string, string]) : [text, undefined];
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const fill = tail === undefined ? [] : new Array<string>(8 - headGroups.length - tailGroups.length).fill('0');
  const groups = [...headGroups, ...fill, ...tailGroups].map((g) => parseInt(g, 16));
  return groups.flatMap((g) => [g >> 8, g & 0xff]);
}

/** The IPv4 address an IPv6 one carries (mapped, NAT64, 6to4), or null. */
function embeddedIpv4(address: string): string | null {
  const bytes = ipv6Bytes(address);
  const zeros = (from: number, to: number) => bytes.slice(from, to).every((b) => b === 0);
  const v4 = (at: number) => bytes.slice(at, at + 4).join('.');
  if (zeros(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return v4(12);
  if (bytes[0] === 0x00 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b && zeros(4, 12)) return v4(12);
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return v4(2);
  return null;
}

/** Every address of this machine's interfaces, now (they can change while the service runs). */
function ownAddresses(): Set<string> {
  const own = new Set<string>();
  for (const list of Object.values(os.networkInterfaces())) {
    for (const info of list ?? []) own.add(normalise(info.address));
  }
  return own;
}

function normalise(address: string): string {
  const bare = address.split('%')[0]!;
  return net.isIPv6(bare) ? ipv6Bytes(bare).join('.') : bare;
}

/** Why `address` (an IP literal) may not be fetched from, or null when it may. */
export function refusalOf(address: string): string | null {
  const family = net.isIP(address.split('%')[0]!);
  if (family === 0) return 'not an IP address';
  if (family === 6) {
    const v4 = embeddedIpv4(address);
    if (v4 !== null) return refusalOf(v4);
    if (BLOCKED.check(address.split('%')[0]!, 'ipv6')) return 'a loopback, private, link-local or reserved address';
  } else if (BLOCKED.check(address, 'ipv4')) {
    return 'a loopback, private, link-local or reserved address';
  }
  if (ownAddresses().has(normalise(address))) return 'an address of this machine';
  return null;
}
