/**
 * Each confined server's own network (docs/reference/network-and-allocations.md): a network namespace the
 * container enters, a routed veth pair into it (a /30 of SERVER_NETWORK), and
 * the service's nftables table (firewall-table.ts), rebuilt from every
 * server's record (network-records.ts) whenever one comes or goes.
 *
 * Order at attach, so that a SIGKILL anywhere leaves what the next start can
 * tell apart (docs/CONTAINMENT.md): the record (namespace name only), the
 * namespace, the veth pair (creating the host side claims the subnet for the
 * machine), the record with the subnet, the addresses inside, the table.
 * Detach: the namespace (the kernel then removes both veth ends, in the
 * background), the record, the table.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { ServerAllocation } from '../../daemon.js';
import { candidateSubnets, type ServerSubnet } from './address-pool.js';
import type { AddressPool } from '../../../server-address-pool.js';
import { renderFirewallTable } from './firewall-table.js';
import { NetworkRecords, type NetworkRecord } from './network-records.js';
import { NetworkToolError, runTool } from './tools.js';

const NETNS_DIR = '/run/netns';
/** Inside every namespace the server's end of the pair has this name. */
const INSIDE_INTERFACE = 'eth0';
/** Tries at claiming a subnet that another service took between our look and our claim. */
const CLAIM_ATTEMPTS = 8;
/** Rebuilds of the table while records keep changing under it (other instances starting servers). */
const APPLY_ROUNDS = 5;
const LOCAL_MTU = 65_535;
const NETNS_DELETE_ATTEMPTS = 5;

export interface NetworkLogger {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface ServerNetworkSettings {
  /** The service's run folder (DATA_DIR/run): records go in `network/`. */
  readonly runDir: string;
  readonly pool: AddressPool;
  readonly ip: string;
  readonly nft: string;
  /** The resolv.conf containers get (written by resolveServerNetwork). */
  readonly resolvConf: string;
  /** The MTU of the host's default route: what servers' traffic to the world is sized for. */
  readonly uplinkMtu: number;
  readonly log: NetworkLogger;
}

export interface AttachedNetwork {
  /** For the OCI spec's network namespace. */
  readonly namespacePath: string;
  readonly inside: string;
  readonly hostInterface: string;
}

export interface NetworkCounters {
  /** Bytes the server received (the host side's transmitted). */
  readonly rxBytes: number;
  readonly txBytes: number;
}

export class ServerNetwork {
  /** `quetzal_` + a hash of the run folder: one table per DATA_DIR, the same for every instance on it. */
  readonly tableName: string;
  private readonly namespacePrefix: string;
  private readonly records: NetworkRecords;
  private readonly interfaces = new Map<string, string>();
  private applying: Promise<void> = Promise.resolve();

  constructor(readonly settings: ServerNetworkSettings) {
    const hash = createHash('sha256').update(path.resolve(settings.runDir)).digest('hex');
    this.tableName = `quetzal_${hash.slice(0, 10)}`;
    this.namespacePrefix = `qz-${hash.slice(0, 10)}-`;
    this.records = new NetworkRecords(path.join(settings.runDir, 'network'));
  }

  get resolvConf(): string {
    return this.settings.resolvConf;
  }

  namespaceName(serverUuid: string): string {
    return `${this.namespacePrefix}${serverUuid}`;
  }

  /** Makes the server's network and publishes its allocations; called under its pid-file claim, before its container starts. */
  async attach(serverUuid: string, allocations: readonly ServerAllocation[]): Promise<AttachedNetwork> {
    // Under our claim nobody else runs this server: anything left is a dead run's.
    if (this.records.readSync(serverUuid) !== null || fs.existsSync(path.join(NETNS_DIR, this.namespaceName(serverUuid)))) {
      this.settings.log.warn({ serverUuid }, "removing the server's previous network before starting it again");
      await this.detach(serverUuid);
    }
    const namespace = this.namespaceName(serverUuid);
    const pending: NetworkRecord = {
      serverUuid,
      namespace,
      hostInterface: null,
      gateway: null,
      inside: null,
      allocations: [...allocations],
    };
    await this.records.write(pending);
    try {
      await runTool(this.settings.ip, ['netns', 'add', namespace]);
      const subnet = await this.claimSubnet(serverUuid, namespace);
      await this.records.write({
        ...pending,
        hostInterface: subnet.hostInterface,
        gateway: subnet.gateway,
        inside: subnet.inside,
      });
      this.interfaces.set(serverUuid, subnet.hostInterface);
      configureHostInterface(subnet.hostInterface);
      await runTool(
        this.settings.ip,
        ['-n', namespace, '-batch', '-'],
        [
          `addr add ${subnet.inside}/30 dev ${INSIDE_INTERFACE}`,
          // No IPv6 link-local address either: nothing to reach, and no chatter (solicitations) in the server's counters.
          `link set ${INSIDE_INTERFACE} addrgenmode none`,
          `link set ${INSIDE_INTERFACE} up`,
          'link set lo up',
          // The world is behind the uplink: its MTU, not the pair's, so nothing the server sends needs splitting on the way out.
          `route add default via ${subnet.gateway} mtu ${this.settings.uplinkMtu}`,
        ].join('\n'),
      );
      await this.applyTable();
      return { namespacePath: path.join(NETNS_DIR, namespace), inside: subnet.inside, hostInterface: subnet.hostInterface };
    } catch (err) {
      await this.detach(serverUuid).catch((cleanupErr: unknown) =>
        this.settings.log.error({ err: cleanupErr, serverUuid }, 'could not remove a half-made server network'),
      );
      throw err;
    }
  }

  /** Removes the server's network and unpublishes it. Idempotent: whatever part is left is removed. */
  async detach(serverUuid: string): Promise<void> {
    this.interfaces.delete(serverUuid);
    const namespace = this.records.readSync(serverUuid)?.namespace ?? this.namespaceName(serverUuid);
    await this.deleteNamespace(namespace);
    await this.records.remove(serverUuid);
    await this.applyTable();
  }

  /** Traffic through the server's veth so far; null when it has none. Synchronous: two small sysfs files. */
  counters(serverUuid: string): NetworkCounters | null {
    let hostInterface = this.interfaces.get(serverUuid);
    // Another instance's server: its record says where.
    if (hostInterface === undefined) hostInterface = this.records.readSync(serverUuid)?.hostInterface ?? undefined;
    if (hostInterface === undefined) return null;
    try {
      const stats = `/sys/class/net/${hostInterface}/statistics`;
      return {
        rxBytes: Number(fs.readFileSync(`${stats}/tx_bytes`, 'utf8')),
        txBytes: Number(fs.readFileSync(`${stats}/rx_bytes`, 'utf8')),
      };
    } catch {
      return null;
    }
  }

  /**
   * At the daemon's start, after the pid files were reaped: removes the
   * networks of servers no pid file names (records, and namespaces a crash
   * left before their record), then rebuilds the table from what is left.
   */
  async sweep(owned: (serverUuid: string) => boolean): Promise<void> {
    const records = await this.records.list();
    const recorded = new Set<string>();
    for (const record of records) {
      if (owned(record.serverUuid)) {
        recorded.add(record.namespace);
        continue;
      }
      this.settings.log.warn({ serverUuid: record.serverUuid }, 'removing a server network no running server accounts for');
      await this.deleteNamespace(record.namespace);
      await this.records.remove(record.serverUuid);
    }
    const namespaces = await fs.promises.readdir(NETNS_DIR).catch(() => [] as string[]);
    for (const namespace of namespaces) {
      if (!namespace.startsWith(this.namespacePrefix) || recorded.has(namespace)) continue;
      if (owned(namespace.slice(this.namespacePrefix.length))) continue; // its attach is under way
      this.settings.log.warn({ namespace }, 'removing a network namespace no record accounts for');
      await this.deleteNamespace(namespace);
    }
    await this.applyTable();
  }

  /**
   * Loads the table as the records say. Records may change while it loads (an
   * instance sharing the DATA_DIR starts a server): it is loaded again until
   * what it was built from is still what the records say, so the last one to
   * load always loads everything.
   */
  applyTable(): Promise<void> {
    const next = this.applying.then(async () => {
      let records = await this.records.list();
      for (let round = 0; round < APPLY_ROUNDS; round++) {
        await runTool(this.settings.nft, ['-f', '-'], renderFirewallTable(this.tableName, records));
        const now = await this.records.list();
        if (JSON.stringify(now) === JSON.stringify(records)) return;
        records = now;
      }
      throw new Error(`the firewall table ${this.tableName} kept changing while it was loaded`);
    });
    this.applying = next.catch(() => undefined);
    return next;
  }

  private async claimSubnet(serverUuid: string, namespace: string): Promise<ServerSubnet> {
    const seed = Number.parseInt(createHash('sha256').update(serverUuid).digest('hex').slice(0, 8), 16);
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
      const taken = new Set(fs.readdirSync('/sys/class/net'));
      const subnet = candidateSubnets(this.settings.pool, seed + attempt, taken).next().value;
      if (subnet === undefined) throw new Error(`no free subnet left in SERVER_NETWORK ${this.settings.pool.cidr}`);
      try {
        await runTool(
          this.settings.ip,
          ['-batch', '-'],
          [
            // Loopback's MTU: the machine's own connections to a published port go as fast as to a host service.
            `link add ${subnet.hostInterface} mtu ${LOCAL_MTU} type veth peer name ${INSIDE_INTERFACE} mtu ${LOCAL_MTU} netns ${namespace}`,
            // No IPv6 link-local address on the host side: a server has nothing of the host's to reach over IPv6.
            `link set ${subnet.hostInterface} addrgenmode none`,
            `addr add ${subnet.gateway}/30 dev ${subnet.hostInterface}`,
            `link set ${subnet.hostInterface} up`,
          ].join('\n'),
        );
        return subnet;
      } catch (err) {
        if (err instanceof NetworkToolError && /File exists/.test(err.stderr)) {
          // Another service took it, or the kernel is still freeing a removed pair of ours: the next one.
          await runTool(this.settings.ip, ['-n', namespace, 'link', 'del', INSIDE_INTERFACE]).catch(() => undefined);
          continue;
        }
        throw err;
      }
    }
    throw new Error(`could not claim a subnet of SERVER_NETWORK ${this.settings.pool.cidr} in ${CLAIM_ATTEMPTS} tries`);
  }

  private async deleteNamespace(namespace: string): Promise<void> {
    if (!fs.existsSync(path.join(NETNS_DIR, namespace))) return;
    for (let attempt = 1; ; attempt++) {
      try {
        await runTool(this.settings.ip, ['netns', 'del', namespace]);
        return;
      } catch (err) {
        if (!fs.existsSync(path.join(NETNS_DIR, namespace))) return;
        // Busy while a process that is ending still holds it: a moment later it is free.
        if (attempt >= NETNS_DELETE_ATTEMPTS) throw err;
        await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
      }
    }
  }
}

/**
 * The host side of a server's pair. route_localnet: the machine's own
 * 127.0.0.1:PORT is DNATed to the server and leaves through this interface
 * with its loopback source (masqueraded on the way out); without it the
 * kernel drops such packets. What it would also let in (127/8 from the
 * server) the table's raw chain drops. rp_filter: a server sends only from
 * its own address.
 */
function configureHostInterface(hostInterface: string): void {
  const conf = `/proc/sys/net/ipv4/conf/${hostInterface}`;
  fs.writeFileSync(`${conf}/route_localnet`, '1');
  fs.writeFileSync(`${conf}/rp_filter`, '1');
}
