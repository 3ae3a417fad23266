/**
 * The pure parts of server networks: the address pool and interface names,
 * the firewall table's text, the resolver file. No root needed.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../../src/config.js';
import { LocalDaemon } from '../../../../src/daemon/local/local-daemon.js';
import { resolveServerNetwork } from '../../../../src/daemon/local/network/network-runtime.js';
import { findTool } from '../../../../src/daemon/local/network/tools.js';
import { candidateSubnets, subnetAt } from '../../../../src/daemon/local/network/address-pool.js';
import { parseAddressPool } from '../../../../src/server-address-pool.js';
import { renderFirewallTable } from '../../../../src/daemon/local/network/firewall-table.js';
import type { NetworkRecord } from '../../../../src/daemon/local/network/network-records.js';
import { containerResolvConf } from '../../../../src/daemon/local/network/resolver.js';
import { allocationEnv } from '../../../../src/daemon/local/network/allocation-env.js';

function record(uuid: string, inside: string | null, allocations: NetworkRecord['allocations']): NetworkRecord {
  return {
    serverUuid: uuid,
    namespace: `qz-x-${uuid}`,
    hostInterface: inside ? 'qz0a4d0004' : null,
    gateway: null,
    inside,
    allocations,
  };
}

describe('the address pool', () => {
  it('cuts SERVER_NETWORK into /30s: gateway first, the server second, the interface named after the subnet', () => {
    const pool = parseAddressPool('10.77.0.0/16');
    expect(pool.subnets).toBe(16384);
    expect(subnetAt(pool, 1)).toEqual({
      base: 0x0a4d0004,
      gateway: '10.77.0.5',
      inside: '10.77.0.6',
      hostInterface: 'qz0a4d0004',
    });
    expect(subnetAt(pool, 16383).inside).toBe('10.77.255.254');
    expect(subnetAt(pool, 1).hostInterface.length).toBeLessThanOrEqual(15);
  });

  it('refuses what is not a usable IPv4 CIDR, clearly', () => {
    expect(() => parseAddressPool('10.77.0.1/16')).toThrow(/host bits set: use 10\.77\.0\.0\/16/);
    expect(() => parseAddressPool('127.0.0.0/8')).toThrow(/not a usable/);
    expect(() => parseAddressPool('10.0.0.0/30')).toThrow(/\/8 to \/29/);
    expect(() => parseAddressPool('fd00::/64')).toThrow(/IPv4 CIDR/);
  });

  it('skips subnets whose interface exists, from a point that depends on the server', () => {
    const pool = parseAddressPool('10.1.0.0/28');
    const taken = new Set(['qz0a010004']);
    expect([...candidateSubnets(pool, 1, taken)].map((s) => s.inside)).toEqual(['10.1.0.10', '10.1.0.14', '10.1.0.2']);
  });
});

describe('the firewall table', () => {
  it('publishes each allocation for TCP and UDP, specific addresses and 0.0.0.0 apart, each address and port once', () => {
    const text = renderFirewallTable('quetzal_t', [
      record('a', '10.77.0.6', [
        { ip: '0.0.0.0', port: 25565 },
        { ip: '192.0.2.2', port: 25566 },
      ]),
      record('b', '10.77.0.10', [{ ip: '0.0.0.0', port: 25565 }]),
      record('c', null, [{ ip: '0.0.0.0', port: 30000 }]),
    ]);
    expect(text.startsWith('table ip quetzal_t {}\ndelete table ip quetzal_t\ntable ip quetzal_t {')).toBe(true);
    expect(text).toContain(
      'map tcp_at { type ipv4_addr . inet_service : ipv4_addr; elements = { 192.0.2.2 . 25566 : 10.77.0.6 }; }',
    );
    expect(text).toContain('map udp_any { type inet_service : ipv4_addr; elements = { 25565 : 10.77.0.6 }; }');
    expect(text).not.toContain('10.77.0.10');
    expect(text).not.toContain('30000');
    for (const rule of [
      'iifname "qz*" ip daddr 127.0.0.0/8 drop',
      'iifname "qz*" reject with icmp type admin-prohibited',
      'oifname "qz*" drop',
      'iifname "qz*" ip daddr 169.254.0.0/16 reject',
    ]) {
      expect(text).toContain(rule);
    }
  });

  it('is only a deletion when no server has a network', () => {
    expect(renderFirewallTable('quetzal_t', [record('c', null, [])])).toBe('table ip quetzal_t {}\ndelete table ip quetzal_t\n');
  });
});

describe('the resolver a server gets', () => {
  it("keeps the host's resolvers a server can reach", () => {
    const choice = containerResolvConf('search example.test\nnameserver 10.255.255.53\nnameserver ::1\n', null);
    expect(choice.problem).toBeNull();
    expect(choice.text).toContain('search example.test\nnameserver 10.255.255.53\n');
    expect(choice.text).not.toContain('::1');
  });

  it("replaces systemd-resolved's loopback stub with its upstream servers", () => {
    const choice = containerResolvConf(
      'nameserver 127.0.0.53\noptions edns0 trust-ad\n',
      'nameserver 192.0.2.53\nnameserver 127.0.0.1\n',
    );
    expect(choice.nameservers).toEqual(['192.0.2.53']);
    expect(choice.text).toContain('options edns0 trust-ad');
  });

  it('says why when nothing is reachable', () => {
    expect(containerResolvConf('nameserver 127.0.0.53\n', null).problem).toMatch(/loopback/);
  });
});

describe('SERVER_IP and SERVER_PORT', () => {
  it('are the primary allocation, and absent without one', () => {
    expect(
      allocationEnv([
        { ip: '192.0.2.2', port: 25565 },
        { ip: '0.0.0.0', port: 1 },
      ]),
    ).toEqual({ SERVER_IP: '192.0.2.2', SERVER_PORT: '25565' });
    expect(allocationEnv([])).toEqual({});
    expect(allocationEnv(undefined)).toEqual({});
  });
});

describe('an unconfined server', () => {
  it('gets SERVER_IP and SERVER_PORT in its environment too', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-net-unconfined-'));
    const daemon = new LocalDaemon(dataDir, { stopGraceMs: 500, containers: null });
    await daemon.start();
    try {
      const target = {
        uuid: randomUUID(),
        startup: 'echo "$SERVER_IP:$SERVER_PORT" > env.txt',
        stopCommand: null,
        allocations: [{ ip: '127.0.0.1', port: 25565 }],
      };
      await daemon.prepareVolume(target);
      await daemon.power(target, 'start');
      const file = path.join(daemon.volumeDir(target.uuid), 'env.txt');
      const deadline = Date.now() + 5_000;
      while (!fs.existsSync(file) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(fs.readFileSync(file, 'utf8')).toBe('127.0.0.1:25565\n');
    } finally {
      await daemon.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('where the machine cannot give servers a network', () => {
  it('says why (no nft, no ip), which makes containment unavailable: auto runs unconfined, on refuses', async () => {
    const runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-net-missing-'));
    try {
      const log = { warn: () => undefined, error: () => undefined };
      const noNft = await resolveServerNetwork({ runDir, log, find: (name) => (name === 'nft' ? null : findTool(name)) });
      expect(noNft).toEqual({ reason: expect.stringMatching(/nft is not installed.*apt-get install nftables/) as unknown });
      const noIp = await resolveServerNetwork({ runDir, log, find: () => null });
      expect(noIp).toEqual({ reason: expect.stringMatching(/ip \(iproute2\) is not installed/) as unknown });
    } finally {
      fs.rmSync(runDir, { recursive: true, force: true });
    }
  });

  it('SERVER_NETWORK that is not a usable CIDR is a configuration error, said clearly', () => {
    expect(() => loadConfig({ SERVER_NETWORK: '10.77.0.1/16' })).toThrow(ConfigError);
    expect(() => loadConfig({ SERVER_NETWORK: 'lan' })).toThrow(/SERVER_NETWORK must be an IPv4 CIDR/);
    expect(loadConfig({}).serverNetwork).toBe('10.77.0.0/16');
  });
});
