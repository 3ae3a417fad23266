/**
 * SERVER_NETWORK (docs/reference/network-and-allocations.md): the IPv4 range confined servers' inside addresses
 * come from, a /30 each. Parsed here, outside the local daemon, because the
 * configuration checks it at start; the daemon's network cuts it into subnets
 * (daemon/local/network/address-pool.ts).
 */
import net from 'node:net';

/** Wings' and Docker's pools live in 172.16/12; this one is out of their way. */
export const DEFAULT_SERVER_NETWORK = '10.77.0.0/16';
/** A /30 per server: network, gateway, server, broadcast. */
export const SUBNET_SIZE = 4;

export interface AddressPool {
  /** First address of the pool, as a number. */
  readonly base: number;
  /** How many /30 subnets it holds. */
  readonly subnets: number;
  readonly cidr: string;
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

export function ipToNumber(ip: string): number {
  return ip.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

export function numberToIp(n: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join('.');
}
