/**
 * Inside addresses for servers (SPEC 13): the pool (`SERVER_NETWORK`, a CIDR)
 * is cut into /30 subnets, one per running server: the host side of its veth
 * pair takes the first address (the server's gateway), the server the second.
 *
 * The host-side interface is named after its subnet (`qz` + the subnet's
 * address in hex), so creating it claims the subnet for the whole machine:
 * two services (two DATA_DIRs, or two instances sharing one) can never route
 * the same subnet, whatever pools they were given. Every Quetzal server
 * interface starts with `qz`, which the firewall rules match.
 */
import net from 'node:net';

export const SERVER_INTERFACE_PREFIX = 'qz';
/** Wings' and Docker's pools live in 172.16/12; this one is out of their way. */
export const DEFAULT_SERVER_NETWORK = '10.77.0.0/16';
const SUBNET_SIZE = 4;

export interface AddressPool {
  /** First address of the pool, as a number. */
  readonly base: number;
  /** How many /30 subnets it holds. */
  readonly subnets: number;
  readonly cidr: string;
}

export interface ServerSubnet {
  /** The subnet's first address, as a number: what its interface is named after. */
  readonly base: number;
  /** The host side of the veth pair: the server's default gateway. */
  readonly gateway: string;
  /** The server's own address inside its namespace, where its published ports are forwarded. */
  readonly inside: string;
  /** The host-side interface: `qz` + 8 hex digits (≤ 15 characters, as the kernel requires). */
  readonly hostInterface: string;
}

export class InvalidServerNetworkError extends Error {}

/** `10.77.0.0/16` → the pool; throws InvalidServerNetworkError for anything but an IPv4 CIDR of /8 to /29 outside 127/8. */
export function parseAddressPool(cidr: string): AddressPool {
  const match = /^(\d+\.\d+\.\d+\.\d+)\/(\d+)$/.exec(cidr.trim());
  if (!match || !net.isIPv4(match[1]!))
    throw new InvalidServerNetworkError(`SERVER_NETWORK must be an IPv4 CIDR such as ${DEFAULT_SERVER_NETWORK}, got "${cidr}"`);
  const prefix = Number(match[2]);
  if (prefix < 8 || prefix > 29)
    throw new InvalidServerNetworkError(`SERVER_NETWORK's prefix must be /8 to /29 (a /30 per server), got /${prefix}`);
  const size = 2 ** (32 - prefix);
  const base = ipToNumber(match[1]!);
  if (base % size !== 0)
    throw new InvalidServerNetworkError(
      `SERVER_NETWORK ${cidr} has host bits set: use ${numberToIp(base - (base % size))}/${prefix}`,
    );
  if (match[1]!.startsWith('127.') || match[1]!.startsWith('169.254.') || base >= ipToNumber('224.0.0.0')) {
    throw new InvalidServerNetworkError(
      `SERVER_NETWORK ${cidr} is not a usable private range (loopback, link-local and multicast are not)`,
    );
  }
  return { base, subnets: size / SUBNET_SIZE, cidr: `${match[1]}/${prefix}` };
}

/** The pool's `index`-th subnet. */
export function subnetAt(pool: AddressPool, index: number): ServerSubnet {
  if (!Number.isInteger(index) || index < 0 || index >= pool.subnets)
    throw new RangeError(`subnet ${index} is outside ${pool.cidr}`);
  return subnetFrom(pool.base + index * SUBNET_SIZE);
}

export function subnetFrom(base: number): ServerSubnet {
  return {
    base,
    gateway: numberToIp(base + 1),
    inside: numberToIp(base + 2),
    hostInterface: `${SERVER_INTERFACE_PREFIX}${base.toString(16).padStart(8, '0')}`,
  };
}

/**
 * The pool's subnets in the order a server tries them: from a point that
 * depends on the server (so that servers starting at once rarely try the
 * same one), wrapping round; those whose interface already exists skipped.
 */
export function* candidateSubnets(pool: AddressPool, seed: number, taken: ReadonlySet<string>): Generator<ServerSubnet> {
  const start = Math.abs(seed) % pool.subnets;
  for (let i = 0; i < pool.subnets; i++) {
    const subnet = subnetAt(pool, (start + i) % pool.subnets);
    if (!taken.has(subnet.hostInterface)) yield subnet;
  }
}

export function ipToNumber(ip: string): number {
  return ip.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

export function numberToIp(n: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join('.');
}
