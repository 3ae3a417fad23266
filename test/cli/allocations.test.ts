import { expect, it } from 'vitest';
import { bootstrapFirstStart } from '../../src/bootstrap.js';
import type { CliCommand, CliContext, CliOptions } from '../../src/cli/command.js';
import { command as allocationAdd } from '../../src/cli/commands/allocation-add.js';
import { command as allocationList } from '../../src/cli/commands/allocation-list.js';
import { command as allocationRemove } from '../../src/cli/commands/allocation-remove.js';
import { machineAddresses } from '../../src/cli/commands/allocation-options.js';
import { command as serverCreate } from '../../src/cli/commands/server-create.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';
import { describeEachDialect, quetzal, quetzalJson, useSandbox } from './helpers.js';

/**
 * The admin command line's allocations (docs/reference/network-and-allocations.md, docs/reference/cli.md): allocation:add,
 * allocation:list, allocation:remove, and server:create --allocation
 * --allocation-limit. Addresses are this machine's own (127.0.0.1 and eth0's
 * 192.0.2.2 here); nothing is sent anywhere.
 */

const SPAWN_TIMEOUT_MS = 120_000;
const LOOPBACK = '127.0.0.1';
/** eth0's address on these machines; any other address of the machine would do. */
const OTHER = machineAddresses().find((ip) => ip !== LOOPBACK)!;

describeEachDatabase('allocation commands', (database) => {
  const h = useHarness(database);
  const ctx = (): CliContext => ({ config: h.config, database: h.db, daemon: h.daemon, clock: h.clock });
  const run = (command: CliCommand, options: CliOptions) => command.run(ctx(), options);
  const add = (options: CliOptions) => run(allocationAdd, options);
  const list = async (options: CliOptions = {}) =>
    (await run(allocationList, options)).allocations as {
      id: number;
      ip: string;
      ip_alias: string | null;
      port: number;
      server: string | null;
      notes: string | null;
    }[];
  const at = async (ip: string) => (await list()).filter((a) => a.ip === ip);

  /** A port range no other test of the file uses (they share one database). */
  let nextPort = 20000;
  const ports = (count: number) => {
    const first = nextPort;
    nextPort += count + 10;
    return Array.from({ length: count }, (_, i) => first + i);
  };

  it('adds single ports and ranges, skips the ones that exist, and lists them in the order added', async () => {
    const [a, b, c, d] = ports(4) as [number, number, number, number];
    expect(await add({ ip: LOOPBACK, ports: `${a}-${c}`, alias: 'local.test' })).toEqual({ created: 3 });
    expect(await add({ ip: LOOPBACK, ports: `${c}, ${a}-${b},${d},${d}`, alias: 'other' })).toEqual({ created: 1 });
    const listed = (await at(LOOPBACK)).filter((x) => x.port >= a && x.port <= d);
    expect(listed).toEqual([
      { id: expect.any(Number), ip: LOOPBACK, ip_alias: 'local.test', port: a, server: null, notes: null },
      { id: expect.any(Number), ip: LOOPBACK, ip_alias: 'local.test', port: b, server: null, notes: null },
      { id: expect.any(Number), ip: LOOPBACK, ip_alias: 'local.test', port: c, server: null, notes: null },
      // An existing allocation keeps its alias; only the new one gets the second.
      { id: expect.any(Number), ip: LOOPBACK, ip_alias: 'other', port: d, server: null, notes: null },
    ]);
    expect(listed.map((x) => x.id)).toEqual([...listed.map((x) => x.id)].sort((x, y) => x - y));
  });

  it("takes Pterodactyl's ports (1025-65535, at most 1000 in a range) and refuses anything else, adding nothing", async () => {
    const before = (await list()).length;
    const refusals: [string, RegExp][] = [
      ['1024', /greater than 1024 and at most 65535/],
      ['65536', /greater than 1024 and at most 65535/],
      ['0', /greater than 1024/],
      ['1000-1100', /greater than 1024/],
      ['3000-2999', /from the lower port to the higher/],
      ['40000-41000', /at most 1000 ports/],
      ['abc', /"abc" is neither a port nor a range/],
      ['25565-', /neither a port nor a range/],
      ['-5', /neither a port nor a range/],
      ['1.5', /neither a port nor a range/],
      ['123456', /neither a port nor a range/],
      [',', /at least one port/],
    ];
    for (const [value, reason] of refusals) {
      await expect(add({ ip: LOOPBACK, ports: value }), value).rejects.toThrow(reason);
    }
    expect((await list()).length).toBe(before);
    expect(await add({ ip: LOOPBACK, ports: '1025,65535' })).toEqual({ created: 2 });
    expect(await add({ ip: LOOPBACK, ports: '50000-50999' })).toEqual({ created: 1000 });
    expect(await run(allocationRemove, { ip: LOOPBACK, ports: '1025,65535,50000-50999' })).toEqual({ removed: 1002 });
  });

  it('takes an IPv4 address of this machine or 0.0.0.0, and refuses any other with the ones it has', async () => {
    for (const ip of ['203.0.113.7', '127.0.0.2']) {
      await expect(add({ ip, ports: '2500' })).rejects.toThrow(
        new RegExp(`${ip.replace(/\./g, '\\.')} is not an address of this machine \\(it has .*127\\.0\\.0\\.1.*0\\.0\\.0\\.0\\)`),
      );
    }
    for (const ip of ['::1', 'localhost', '127.0.0.01', '127.0.0', '']) {
      await expect(add({ ip, ports: '2500' }), ip).rejects.toThrow(
        ip === '' ? '--ip is required' : `"${ip}" is not an IPv4 address`,
      );
    }
    await expect(add({ ip: LOOPBACK, ports: '2500', alias: 'a'.repeat(192) })).rejects.toThrow(
      '--alias must be at most 191 characters',
    );
    await expect(add({ ports: '2500' })).rejects.toThrow('--ip is required');
    await expect(add({ ip: LOOPBACK })).rejects.toThrow('--ports is required');
    const [port] = ports(1) as [number];
    expect(await add({ ip: OTHER, ports: String(port) })).toEqual({ created: 1 });
  });

  it("refuses the panel's own port on any address the panel listens on", async () => {
    expect(h.config).toMatchObject({ port: 8080, host: LOOPBACK });
    for (const ip of [LOOPBACK, '0.0.0.0']) {
      await expect(add({ ip, ports: '8000-8100' })).rejects.toThrow(
        `--ports: 8080 is the panel's own port (PORT, on ${LOOPBACK}); an allocation there would take its traffic`,
      );
    }
    expect((await list()).filter((x) => x.port >= 8000 && x.port <= 8100)).toEqual([]);
    // The panel does not listen on the machine's other addresses.
    expect(await add({ ip: OTHER, ports: '8080' })).toEqual({ created: 1 });
    expect(await run(allocationRemove, { ip: OTHER, ports: '8080' })).toEqual({ removed: 1 });
  });

  it('refuses an allocation that 0.0.0.0 would overlap, either way round', async () => {
    const [a, b] = ports(2) as [number, number];
    await add({ ip: LOOPBACK, ports: String(a) });
    await expect(add({ ip: '0.0.0.0', ports: `${a}-${b}` })).rejects.toThrow(
      `${LOOPBACK}:${a} already exist, and 0.0.0.0 covers every address`,
    );
    expect(await add({ ip: '0.0.0.0', ports: String(b) })).toEqual({ created: 1 });
    await expect(add({ ip: OTHER, ports: String(b) })).rejects.toThrow(`0.0.0.0:${b} already exist, and 0.0.0.0 covers ${OTHER}`);
    expect((await list()).filter((x) => x.port === a || x.port === b)).toHaveLength(2);
  });

  it('server:create gives the first free allocation by default or auto, an exact one when named, and stores the limit', async () => {
    const { user } = await h.make.user();
    const [a, b, c] = ports(3) as [number, number, number];
    await add({ ip: OTHER, ports: `${a}-${c}` });
    const firstFree = (await list({ free: true }))[0]!;
    const plain = await run(serverCreate, { owner: user.username, name: 'plain' });
    expect((await list({ server: plain.uuid as string })).map((x) => x.id)).toEqual([firstFree.id]);

    const exact = await run(serverCreate, {
      owner: user.username,
      name: 'exact',
      allocation: `${OTHER}:${c}`,
      'allocation-limit': '4',
    });
    const row = await h.db.db
      .selectFrom('servers')
      .selectAll()
      .where('uuid', '=', exact.uuid as string)
      .executeTakeFirstOrThrow();
    const held = await list({ server: exact.uuid as string });
    expect(held).toEqual([{ id: expect.any(Number), ip: OTHER, ip_alias: null, port: c, server: exact.uuid, notes: null }]);
    expect(row).toMatchObject({ allocation_id: held[0]!.id, allocation_limit: 4 });
    expect(plain).toEqual({ uuid: expect.any(String), identifier: expect.any(String), name: 'plain' });

    // Taken, or not there: refused, and no server is left behind.
    const servers = async () =>
      (await h.db.db.selectFrom('servers').select('id').where('owner_id', '=', user.id).execute()).length;
    const count = await servers();
    await expect(run(serverCreate, { owner: user.username, name: 'x', allocation: `${OTHER}:${c}` })).rejects.toThrow(
      `The allocation ${OTHER}:${c} is held by another server.`,
    );
    await expect(
      run(serverCreate, { owner: user.username, name: 'x', allocation: `${OTHER}:${nextPort + 5000}` }),
    ).rejects.toThrow(`No allocation ${OTHER}:${nextPort + 5000} exists (allocation:add makes it).`);
    for (const value of ['127.0.0.1', '127.0.0.1:', 'host:2500', '127.0.0.1:80', '127.0.0.1:70000', 'AUTO', '[::1]:2500']) {
      await expect(run(serverCreate, { owner: user.username, name: 'x', allocation: value }), value).rejects.toThrow(
        /--allocation/,
      );
    }
    for (const value of ['-1', '1.5', 'two', '2147483648']) {
      await expect(run(serverCreate, { owner: user.username, name: 'x', 'allocation-limit': value }), value).rejects.toThrow(
        `--allocation-limit must be a whole number from 0 to 2147483647, got "${value}"`,
      );
    }
    expect(await servers()).toBe(count);
    expect((await list()).find((x) => x.port === b)?.server).not.toBe(exact.uuid);
  });

  it('server:create with none free makes a server without an allocation, its limit 0 by default', async () => {
    const { user } = await h.make.user();
    // Take every free one first (other tests left some).
    for (const free of await list({ free: true })) {
      await run(serverCreate, { owner: user.username, name: 'taker', allocation: `${free.ip}:${free.port}` });
    }
    for (const allocation of [undefined, 'auto']) {
      const made = await run(serverCreate, { owner: user.username, name: 'bare', ...(allocation ? { allocation } : {}) });
      const row = await h.db.db
        .selectFrom('servers')
        .selectAll()
        .where('uuid', '=', made.uuid as string)
        .executeTakeFirstOrThrow();
      expect(row).toMatchObject({ allocation_id: null, allocation_limit: 0 });
      expect(await list({ server: made.uuid as string })).toEqual([]);
    }
  });

  it("lists a server's allocations or the free ones; --server and --free exclude each other", async () => {
    const { user } = await h.make.user();
    const [a, b] = ports(2) as [number, number];
    await add({ ip: LOOPBACK, ports: `${a}-${b}` });
    const made = await run(serverCreate, { owner: user.username, name: 'lister', allocation: `${LOOPBACK}:${a}` });
    expect((await list({ server: made.identifier as string })).map((x) => x.port)).toEqual([a]);
    const free = await list({ free: true });
    expect(free.every((x) => x.server === null)).toBe(true);
    expect(free.map((x) => x.port)).toContain(b);
    expect(free.map((x) => x.port)).not.toContain(a);
    await expect(list({ server: made.uuid as string, free: true })).rejects.toThrow('--server and --free exclude each other');
    await expect(list({ server: 'nosuchserver' })).rejects.toThrow('No server matches "nosuchserver".');
  });

  it('removes free allocations, skips missing ones, and refuses (removing none) while a server holds any', async () => {
    const { user } = await h.make.user();
    const [a, b, c] = ports(3) as [number, number, number];
    await add({ ip: LOOPBACK, ports: `${a}-${c}` });
    await run(serverCreate, { owner: user.username, name: 'holder', allocation: `${LOOPBACK}:${b}` });
    await expect(run(allocationRemove, { ip: LOOPBACK, ports: `${a}-${c}` })).rejects.toThrow(
      `${LOOPBACK}:${b} is held by a server: nothing was removed`,
    );
    expect((await at(LOOPBACK)).filter((x) => x.port >= a && x.port <= c)).toHaveLength(3);
    expect(await run(allocationRemove, { ip: LOOPBACK, ports: `${a},${c},${c + 1}` })).toEqual({ removed: 2 });
    expect((await at(LOOPBACK)).filter((x) => x.port >= a && x.port <= c).map((x) => x.port)).toEqual([b]);
    // An address the machine no longer has can still be cleaned up; a malformed one cannot.
    await h.db.db
      .insertInto('allocations')
      .values({ ip: '198.51.100.4', port: a, ip_alias: null, server_id: null, notes: null, created_at: 0, updated_at: 0 })
      .execute();
    expect(await run(allocationRemove, { ip: '198.51.100.4', ports: String(a) })).toEqual({ removed: 1 });
    await expect(run(allocationRemove, { ip: 'nowhere', ports: String(a) })).rejects.toThrow('"nowhere" is not an IPv4 address');
    await expect(run(allocationRemove, { ip: LOOPBACK, ports: '80' })).rejects.toThrow('greater than 1024');
  });

  it('first start gives the demo server an allocation only when one exists', async () => {
    for (const withAllocation of [false, true]) {
      const fresh = await database.open();
      try {
        const [port] = ports(1) as [number];
        if (withAllocation) {
          await fresh.db
            .insertInto('allocations')
            .values({ ip: LOOPBACK, port, ip_alias: null, server_id: null, notes: null, created_at: 0, updated_at: 0 })
            .execute();
        }
        const credentials = await bootstrapFirstStart({ db: fresh.db, dialect: fresh.dialect, daemon: h.daemon, clock: h.clock });
        const demo = await fresh.db
          .selectFrom('servers')
          .selectAll()
          .where('uuid_short', '=', credentials!.serverIdentifier)
          .executeTakeFirstOrThrow();
        const held = await fresh.db.selectFrom('allocations').selectAll().where('server_id', '=', demo.id).execute();
        expect(held.map((x) => x.port)).toEqual(withAllocation ? [port] : []);
        expect(demo.allocation_id).toBe(withAllocation ? held[0]!.id : null);
        expect(demo.allocation_limit).toBe(0);
      } finally {
        await fresh.dispose();
      }
    }
  });
});

describeEachDialect('allocation commands on the command line', (dialect) => {
  const box = useSandbox(dialect);

  it(
    'print one JSON object with --json, a table without, and one line on standard error when refused',
    async () => {
      expect(
        await quetzalJson(['allocation:add', '--ip', LOOPBACK, '--ports', '25565-25567,30000', '--alias', 'play.test'], box.env),
      ).toEqual({
        created: 4,
      });
      await quetzalJson(['user:create', '--username', 'alice', '--email', 'alice@example.com'], box.env);
      const server = await quetzalJson(['server:create', '--owner', 'alice', '--name', 'mc', '--allocation-limit', '2'], box.env);

      const listed = await quetzalJson(['allocation:list'], box.env);
      expect(listed).toEqual({
        allocations: [
          { id: expect.any(Number), ip: LOOPBACK, ip_alias: 'play.test', port: 25565, server: server.uuid, notes: null },
          { id: expect.any(Number), ip: LOOPBACK, ip_alias: 'play.test', port: 25566, server: null, notes: null },
          { id: expect.any(Number), ip: LOOPBACK, ip_alias: 'play.test', port: 25567, server: null, notes: null },
          { id: expect.any(Number), ip: LOOPBACK, ip_alias: 'play.test', port: 30000, server: null, notes: null },
        ],
      });
      const human = await quetzal(['allocation:list', '--server', server.identifier as string], box.env);
      expect(human.code).toBe(0);
      expect(human.stdout).toBe(`${listed.allocations[0].id}\t${LOOPBACK}:25565\tplay.test\t${server.uuid}\n`);

      const refused = await quetzal(['allocation:remove', '--ip', LOOPBACK, '--ports', '25565-25567', '--json'], box.env);
      expect(refused.code).toBe(1);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toBe(`quetzal: ${LOOPBACK}:25565 is held by a server: nothing was removed\n`);
      expect(await quetzalJson(['allocation:remove', '--ip', LOOPBACK, '--ports', '25566-25567'], box.env)).toEqual({
        removed: 2,
      });
      expect(await quetzalJson(['allocation:list', '--free'], box.env)).toEqual({
        allocations: [{ id: expect.any(Number), ip: LOOPBACK, ip_alias: 'play.test', port: 30000, server: null, notes: null }],
      });

      const help = await quetzal(['--help'], box.env);
      // The usage column is as wide as the longest command's name.
      expect(help.stdout).toMatch(/allocation:add +--ip IP --ports P\[,P-Q\.\.\.\] \[--alias NAME\]/);
      expect(help.stdout).toMatch(/allocation:list +\[--server S\] \[--free\]/);
      expect(help.stdout).toMatch(/allocation:remove +--ip IP --ports P\[,P-Q\.\.\.\]/);
      const createHelp = await quetzal(['server:create', '--help'], box.env);
      expect(createHelp.stdout).toContain('[--allocation IP:PORT|auto] [--allocation-limit N]');
    },
    SPAWN_TIMEOUT_MS,
  );
});
