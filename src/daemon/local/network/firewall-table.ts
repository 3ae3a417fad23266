/**
 * The one nftables table a service (a DATA_DIR) owns: what is published to
 * which server, and what no server may reach (docs/reference/network-and-allocations.md, docs/reference/containment.md). Rendered
 * whole from the network records and loaded with one `nft -f`, which the
 * kernel applies as a single transaction: a reader never sees half a table,
 * and a rebuild after a crash cannot duplicate a rule.
 *
 * The isolation rules match every server interface (`qz*`), whoever owns it:
 * each service's table says the same of all of them, so a second service on
 * the machine adds nothing a server could use. Published ports are this
 * table's own servers' only.
 */
import net from 'node:net';
import type { ServerAllocation } from '../../daemon.js';
import { SERVER_INTERFACE_PREFIX } from './address-pool.js';
import type { NetworkRecord } from './network-records.js';

const SERVERS = `"${SERVER_INTERFACE_PREFIX}*"`;
/** Every address of this machine (docs/reference/network-and-allocations.md's `0.0.0.0` allocation). */
const ANY_ADDRESS = '0.0.0.0';

interface Published {
  readonly allocation: ServerAllocation;
  readonly inside: string;
}

/**
 * The table's whole definition: `table {}` then `delete table` make the load
 * work whether or not it exists, then the new one. With no server, only the
 * deletion: a service with nothing running leaves nothing in the firewall.
 */
export function renderFirewallTable(tableName: string, records: readonly NetworkRecord[]): string {
  const reset = `table ip ${tableName} {}\ndelete table ip ${tableName}\n`;
  const live = records.filter((record) => record.hostInterface !== null && record.inside !== null);
  if (live.length === 0) return reset;
  const published = publishedPorts(live);
  const specific = published.filter((p) => p.allocation.ip !== ANY_ADDRESS);
  const any = published.filter((p) => p.allocation.ip === ANY_ADDRESS);
  const atElements = specific.map((p) => `${p.allocation.ip} . ${p.allocation.port} : ${p.inside}`);
  const anyElements = any.map((p) => `${p.allocation.port} : ${p.inside}`);
  return `${reset}table ip ${tableName} {
  map tcp_at { type ipv4_addr . inet_service : ipv4_addr;${elements(atElements)} }
  map udp_at { type ipv4_addr . inet_service : ipv4_addr;${elements(atElements)} }
  map tcp_any { type inet_service : ipv4_addr;${elements(anyElements)} }
  map udp_any { type inet_service : ipv4_addr;${elements(anyElements)} }

  # Loopback is the host's own: nothing from a server may be to or from 127/8.
  # (route_localnet on server interfaces, for 127.0.0.1:PORT, would allow it otherwise.)
  chain raw_prerouting {
    type filter hook prerouting priority raw; policy accept;
    iifname ${SERVERS} ip daddr 127.0.0.0/8 drop
    iifname ${SERVERS} ip saddr 127.0.0.0/8 drop
  }

  # Allocations: to any address of this machine, from players, servers and the machine itself.
  chain publish {
    dnat to ip daddr . tcp dport map @tcp_at
    dnat to ip daddr . udp dport map @udp_at
    dnat to tcp dport map @tcp_any
    dnat to udp dport map @udp_any
  }
  chain nat_prerouting {
    type nat hook prerouting priority dstnat; policy accept;
    fib daddr type local jump publish
  }
  chain nat_output {
    type nat hook output priority -100; policy accept;
    fib daddr type local jump publish
  }

  # No host service on any host address answers a server: only replies to the host's own connections.
  chain input {
    type filter hook input priority filter; policy accept;
    iifname ${SERVERS} ct state established,related accept
    iifname ${SERVERS} reject with icmp type admin-prohibited
  }

  # Into a server: only what was published to it, and replies to what it started.
  # Out of a server: the uplink, but not link-local (cloud metadata).
  chain forward {
    type filter hook forward priority filter; policy accept;
    oifname ${SERVERS} ct status dnat accept
    oifname ${SERVERS} ct state established,related accept
    oifname ${SERVERS} drop
    iifname ${SERVERS} ip daddr 169.254.0.0/16 reject with icmp type admin-prohibited
  }

  chain nat_postrouting {
    type nat hook postrouting priority srcnat; policy accept;
    # The machine's own 127.0.0.1:PORT: the server must answer somewhere it can reach.
    oifname ${SERVERS} ip saddr 127.0.0.0/8 masquerade
    # A server reaching a server (itself too) through a published port: as an outsider, from the gateway.
    oifname ${SERVERS} iifname ${SERVERS} masquerade
    iifname ${SERVERS} oifname != ${SERVERS} masquerade
  }
}
`;
}

function elements(list: readonly string[]): string {
  return list.length === 0 ? '' : ` elements = { ${list.join(', ')} };`;
}

/**
 * Each allocation once: when two servers hold the same address and port (the
 * database forbids it; a record from a crash might not), the first by uuid
 * keeps it, since a map cannot hold one key twice.
 */
function publishedPorts(records: readonly NetworkRecord[]): Published[] {
  const seen = new Set<string>();
  const result: Published[] = [];
  for (const record of records) {
    for (const allocation of record.allocations) {
      if (!isPublishable(allocation)) continue;
      const key = `${allocation.ip}:${allocation.port}`;
      if (seen.has(key)) continue;
      seen.add(key);
      result.push({ allocation, inside: record.inside! });
    }
  }
  return result;
}

/** IPv4 only (the table is `ip`); anything else in a record is not written into the firewall. */
export function isPublishable(allocation: ServerAllocation): boolean {
  return net.isIPv4(allocation.ip) && Number.isInteger(allocation.port) && allocation.port >= 1 && allocation.port <= 65535;
}
