/**
 * allocation:add accepts only addresses players can reach (docs/reference/network-and-allocations.md): the
 * host end of a server's own veth pair has an address on this machine, but it
 * is an inside address and must never be offered as an allocation.
 */
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { machineAddresses } from '../../src/cli/commands/allocation-options.js';
import { SERVER_INTERFACE_PREFIX } from '../../src/daemon/local/network/address-pool.js';

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });

describe('machine addresses for allocations', () => {
  const suffix = crypto.randomBytes(3).toString('hex');
  const serverLike = `${SERVER_INTERFACE_PREFIX}t${suffix}`;
  const ordinary = `qa${suffix}`;
  const octet = 1 + (crypto.randomBytes(1)[0]! % 250);

  beforeAll(() => {
    if (process.getuid?.() !== 0) throw new Error('this test needs root: it adds a veth pair');
    // One pair, both ends on the host: one named as a server's host end, one not.
    ip('link', 'add', serverLike, 'type', 'veth', 'peer', 'name', ordinary);
    ip('addr', 'add', `198.18.${octet}.1/32`, 'dev', serverLike);
    ip('addr', 'add', `198.18.${octet}.2/32`, 'dev', ordinary);
    // Node lists only interfaces that are up and running.
    ip('link', 'set', serverLike, 'up');
    ip('link', 'set', ordinary, 'up');
  });

  afterAll(() => {
    try {
      ip('link', 'del', serverLike); // the peer goes with it
    } catch {
      // already gone
    }
  });

  it("leaves out the host ends of servers' veth pairs and keeps every other interface's address", () => {
    const addresses = machineAddresses();
    expect(addresses).toContain(`198.18.${octet}.2`);
    expect(addresses).not.toContain(`198.18.${octet}.1`);
    expect(addresses).toContain('127.0.0.1');
  });
});
