/**
 * Inside addresses for servers (docs/reference/network-and-allocations.md): the pool (`SERVER_NETWORK`, a CIDR)
 * is cut into /30 subnets, one per running server: the host side of its veth
 * pair takes the first address (the server's gateway), the server the second.
 *
 * The host-side interface is named after its subnet (`qz` + the subnet's
 * address in hex), so creating it claims the subnet for the whole machine:
 * two services (two DATA_DIRs, or two instances sharing one) can never route
 * the same subnet, whatever pools they were given. Every Quetzal server
 * interface starts with `qz`, which the firewall rules match.
 */
import { SUBNET_SIZE, numberToIp, type AddressPool } from '../../../server-address-pool.js';

export const SERVER_INTERFACE_PREFIX = 'qz';

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
