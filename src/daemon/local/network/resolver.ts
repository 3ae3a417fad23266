/**
 * The resolver a server's namespace uses. The host's /etc/resolv.conf may
 * name a resolver on the host's loopback (systemd-resolved's 127.0.0.53),
 * which a server cannot reach from its own namespace, and must not: the
 * host's loopback is closed to it. Such entries are replaced with the
 * upstream servers systemd-resolved itself uses; the result is bound over
 * the container's /etc/resolv.conf.
 */
import net from 'node:net';

export interface ResolverChoice {
  /** The file's text; it may name no server (then `problem` says why). */
  readonly text: string;
  readonly nameservers: readonly string[];
  readonly problem: string | null;
}

/** `host`: /etc/resolv.conf's text; `upstream`: systemd-resolved's /run/systemd/resolve/resolv.conf, or null. */
export function containerResolvConf(host: string, upstream: string | null): ResolverChoice {
  const hostServers = nameservers(host);
  let servers = hostServers.filter(isReachableFromServer);
  if (servers.length === 0 && upstream !== null) servers = nameservers(upstream).filter(isReachableFromServer);
  const kept = host.split('\n').filter((line) => /^\s*(search|domain|options)\b/.test(line));
  const lines = ["# Written by Quetzal for game servers: the host's resolvers a server's own network can reach.", ...kept];
  for (const server of servers.slice(0, 3)) lines.push(`nameserver ${server}`);
  const problem =
    servers.length > 0
      ? null
      : hostServers.length === 0
        ? "the host's /etc/resolv.conf names no nameserver"
        : `the host's resolvers (${hostServers.join(', ')}) are on its loopback, which servers cannot reach, and no upstream resolver was found in /run/systemd/resolve/resolv.conf`;
  return { text: `${lines.join('\n')}\n`, nameservers: servers, problem };
}

function nameservers(text: string): string[] {
  return text
    .split('\n')
    .map((line) => /^\s*nameserver\s+(\S+)/.exec(line)?.[1])
    .filter((server): server is string => server !== undefined);
}

/** Loopback (the host's own) and IPv6 (servers have no IPv6 route) are out of a server's reach. */
function isReachableFromServer(server: string): boolean {
  return net.isIPv4(server) && !server.startsWith('127.') && server !== '0.0.0.0';
}
