import net from 'node:net';
import os from 'node:os';
import { SERVER_INTERFACE_PREFIX } from '../../daemon/local/network/address-pool.js';
import { CliError } from '../command.js';
import { ANY_ADDRESS } from '../../modules/allocations/allocations.repository.js';
import type { InitialAllocation } from '../../modules/allocations/allocations.service.js';

/**
 * The admin command line's allocation options (docs/reference/network-and-allocations.md, docs/reference/cli.md). Ports
 * follow Pterodactyl's AssignmentService: above 1024 (a port below is a
 * system service's, and a server never runs as root) up to 65535, at most
 * 1000 in one range. Addresses are IPv4: the per-server network publishes
 * them with IPv4 NAT, as Wings' default Docker network does.
 */
const PORT_FLOOR = 1024;
const PORT_CEIL = 65535;
const PORT_RANGE_LIMIT = 1000;

const PORT = /^\d{1,5}$/;
const RANGE = /^(\d{1,5})-(\d{1,5})$/;

function checkPort(port: number, entry: string): void {
  if (port <= PORT_FLOOR || port > PORT_CEIL) {
    throw new CliError(`--ports: "${entry}": ports must be greater than ${PORT_FLOOR} and at most ${PORT_CEIL}`);
  }
}

/** `P[,P-Q...]` → the ports, ascending, each once. */
export function parsePorts(value: string): number[] {
  const ports = new Set<number>();
  for (const raw of value.split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const range = RANGE.exec(entry);
    if (range) {
      const first = Number(range[1]);
      const last = Number(range[2]);
      checkPort(first, entry);
      checkPort(last, entry);
      if (last < first) throw new CliError(`--ports: "${entry}": a range goes from the lower port to the higher`);
      if (last - first + 1 > PORT_RANGE_LIMIT) {
        throw new CliError(`--ports: "${entry}": a range holds at most ${PORT_RANGE_LIMIT} ports`);
      }
      for (let port = first; port <= last; port++) ports.add(port);
    } else if (PORT.test(entry)) {
      checkPort(Number(entry), entry);
      ports.add(Number(entry));
    } else {
      throw new CliError(`--ports: "${entry}" is neither a port nor a range P-Q`);
    }
  }
  if (ports.size === 0) throw new CliError('--ports needs at least one port');
  return [...ports].sort((a, b) => a - b);
}

/** An IPv4 address in its usual form (no leading zeros), or a CliError naming the option. */
export function parseIpv4(value: string, option: string): string {
  if (!net.isIPv4(value)) throw new CliError(`--${option}: "${value}" is not an IPv4 address`);
  return value;
}

/**
 * The IPv4 addresses of this machine's interfaces, as the kernel has them now,
 * less the host ends of servers' own veth pairs (docs/reference/network-and-allocations.md): those are inside
 * addresses, never a place players can reach.
 */
export function machineAddresses(): string[] {
  return Object.entries(os.networkInterfaces())
    .filter(([name]) => !name.startsWith(SERVER_INTERFACE_PREFIX))
    .flatMap(([, addresses]) => addresses ?? [])
    .filter((address) => address.family === 'IPv4')
    .map((address) => address.address);
}

/** `--ip` of allocation:add: an address of this machine (players must be able to reach it), or 0.0.0.0 for all. */
export function parseMachineIp(value: string, addresses: readonly string[] = machineAddresses()): string {
  const ip = parseIpv4(value, 'ip');
  if (ip !== ANY_ADDRESS && !addresses.includes(ip)) {
    throw new CliError(`--ip: ${ip} is not an address of this machine (it has ${[...addresses, ANY_ADDRESS].join(', ')})`);
  }
  return ip;
}

/**
 * Whether traffic to `a` and to `b` on one port can be the same: the same
 * address, or either is every address (0.0.0.0, or a HOST that is not an IPv4
 * address: `::`, a name).
 */
export function addressesOverlap(a: string, b: string): boolean {
  return a === b || a === ANY_ADDRESS || b === ANY_ADDRESS || !net.isIPv4(a) || !net.isIPv4(b);
}

/** `--allocation IP:PORT|auto` of server:create. */
export function parseAllocationChoice(value: string): InitialAllocation {
  if (value === 'auto') return { kind: 'auto' };
  const match = /^([^:]+):(\d{1,5})$/.exec(value);
  if (!match) throw new CliError(`--allocation must be IP:PORT or auto, got "${value}"`);
  const ip = parseIpv4(match[1]!, 'allocation');
  const port = Number(match[2]);
  if (port <= PORT_FLOOR || port > PORT_CEIL) {
    throw new CliError(`--allocation: ports must be greater than ${PORT_FLOOR} and at most ${PORT_CEIL}, got ${port}`);
  }
  return { kind: 'exact', ip, port };
}

const MAX_ALLOCATION_LIMIT = 2_147_483_647;

/** `--allocation-limit N`: how many allocations the server's users may hold; default 0 (Pterodactyl's `allocation_limit`). */
export function parseAllocationLimit(value: string | undefined): number {
  if (value === undefined) return 0;
  if (!/^\d+$/.test(value) || Number(value) > MAX_ALLOCATION_LIMIT) {
    throw new CliError(`--allocation-limit must be a whole number from 0 to ${MAX_ALLOCATION_LIMIT}, got "${value}"`);
  }
  return Number(value);
}

/** `--database-limit N`: how many databases the server's users may create (docs/reference/accounts.md, default 0 as Pterodactyl). */
export function parseDatabaseLimit(value: string): number {
  if (!/^\d{1,6}$/.test(value)) throw new CliError(`--database-limit must be a whole number from 0 to 999999, got "${value}"`);
  return Number(value);
}
