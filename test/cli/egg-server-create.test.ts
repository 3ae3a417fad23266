import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CliCommand, CliContext, CliOptions } from '../../src/cli/command.js';
import { CliError } from '../../src/cli/command.js';
import { command as eggImport } from '../../src/cli/commands/egg-import.js';
import { command as serverCreate } from '../../src/cli/commands/server-create.js';
import { serverVariableValues } from '../../src/modules/eggs/eggs.repository.js';
import { findServerByReference } from '../../src/modules/servers/servers.repository.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';
import { quetzalJson, useSandbox } from './helpers.js';
import { parseArguments } from '../../src/cli/main.js';
import { createUser } from '../../src/modules/users/users.repository.js';

/** `server:create --egg ID [--image NAME] [--variable KEY=VALUE ...]` (docs/reference/eggs-and-installs.md, docs/reference/cli.md). */

/** Two spawns of the binary: seconds each on a busy machine. */
const SPAWN_TIMEOUT_MS = 120_000;
const GREETER = path.resolve(import.meta.dirname, '../fixtures/eggs/own/greeter.json');

describeEachDatabase('server:create --egg', (database) => {
  const h = useHarness(database);
  const ctx = (): CliContext => ({ config: h.config, database: h.db, daemon: h.daemon, clock: h.clock });
  const run = (command: CliCommand, options: CliOptions) => command.run(ctx(), options);
  const count = async (table: 'servers' | 'server_variables') =>
    Number(
      (
        await h.db.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  let eggId: number;
  let owner: string;
  const create = async (options: CliOptions) => run(serverCreate, { owner, name: 'egg server', egg: String(eggId), ...options });

  it("copies the egg's startup and stop, takes its first image, and stores every variable (given or default)", async () => {
    eggId = (await run(eggImport, { file: GREETER })).id as number;
    owner = (await h.make.user()).user.username;
    const result = await create({ variable: ['GREETING=hola', 'PLAYER_NAME=a; rm -rf /'] });
    expect(result).toEqual({ uuid: expect.any(String), identifier: expect.any(String), name: 'egg server', status: null });
    const server = (await findServerByReference(h.db.db, result.uuid as string))!;
    expect(server).toMatchObject({
      egg_id: eggId,
      image: 'ghcr.io/quetzal/greeter:1',
      startup: expect.stringContaining('sh ./greeter.sh {{GREETING}}'),
      stop_command: 'stop',
    });
    const values = await serverVariableValues(h.db.db, server.id);
    expect(values.map((v) => [v.env_variable, v.server_value])).toEqual([
      ['GREETING', 'hola'],
      ['MAX_PLAYERS', '20'],
      ['PLAYER_NAME', 'a; rm -rf /'],
      ['SECRET_TOKEN', 's3cret'],
    ]);
  });

  it("takes --image among the egg's or the node's images (host is stored as null), --startup over the egg's", async () => {
    const second = await create({ image: 'ghcr.io/quetzal/greeter:2', startup: 'echo mine' });
    expect((await findServerByReference(h.db.db, second.uuid as string))!).toMatchObject({
      image: 'ghcr.io/quetzal/greeter:2',
      startup: 'echo mine',
    });
    const host = await create({ image: 'host' });
    expect((await findServerByReference(h.db.db, host.uuid as string))!.image).toBeNull();
  });

  it('refuses a value its rules refuse, naming the variable, and creates nothing', async () => {
    const cases: [CliOptions, string][] = [
      [{ variable: ['GREETING=bonjour'] }, '--variable GREETING: The selected Greeting variable is invalid.'],
      [{ variable: ['MAX_PLAYERS=500'] }, '--variable MAX_PLAYERS: The Max Players variable must be between 1 and 100.'],
      [{ variable: ['MAX_PLAYERS=twenty'] }, '--variable MAX_PLAYERS: The Max Players variable must be an integer.'],
      [{ variable: ['GREETING='] }, '--variable GREETING: The Greeting variable field is required.'],
      [{ variable: ['SECRET_TOKEN=NO!'] }, '--variable SECRET_TOKEN: The Secret variable format is invalid.'],
      [
        { variable: ['NOPE=1'] },
        'the egg has no variable NOPE (its variables: GREETING, MAX_PLAYERS, PLAYER_NAME, SECRET_TOKEN)',
      ],
      [{ variable: ['GREETING'] }, '--variable must be KEY=VALUE, got "GREETING"'],
      [{ variable: ['GREETING=hi', 'GREETING=hola'] }, '--variable GREETING given twice'],
      [{ image: 'debian:12' }, 'image "debian:12" is neither one of the egg\'s'],
      [{ egg: '9999' }, 'egg 9999 does not exist'],
      [{ egg: 'abc' }, "--egg must be an egg's id"],
    ];
    const before = [await count('servers'), await count('server_variables')];
    for (const [options, message] of cases) {
      const error = await create(options).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CliError);
      expect((error as Error).message).toContain(message);
    }
    const noEgg = await run(serverCreate, { owner, name: 'x', image: 'host' }).catch((e: unknown) => e);
    expect((noEgg as Error).message).toBe('--image and --variable need --egg');
    expect([await count('servers'), await count('server_variables')]).toEqual(before);
  });
});

// One database: what this adds over the tests above is the binary's option parsing (a repeated --variable).
describe('server:create --egg from the command line', () => {
  const box = useSandbox('sqlite');

  it('parses --variable as repeatable; other options given twice stay refused', () => {
    const parsed = parseArguments(serverCreate, ['--variable', 'A=1', '--variable=B=2=3', '--egg', '1']);
    expect(parsed.options).toEqual({ variable: ['A=1', 'B=2=3'], egg: '1' });
    expect(() => parseArguments(serverCreate, ['--egg', '1', '--egg', '2'])).toThrow('--egg given twice');
  });

  it('takes --variable more than once and prints status', { timeout: SPAWN_TIMEOUT_MS }, async () => {
    const egg = await quetzalJson(['egg:import', '--file', GREETER], box.env);
    await createUser(box.db().db, { username: 'eggs', email: 'eggs@quetzal.test', rootAdmin: false, now: Date.now() });
    const created = await quetzalJson(
      [
        'server:create',
        '--owner',
        'eggs',
        '--name',
        'g',
        '--egg',
        String(egg.id),
        '--variable',
        'GREETING=hi',
        '--variable=MAX_PLAYERS=7',
      ],
      box.env,
    );
    expect(created).toEqual({ uuid: expect.any(String), identifier: expect.any(String), name: 'g', status: null });
    const server = (await findServerByReference(box.db().db, created.uuid as string))!;
    const values = await serverVariableValues(box.db().db, server.id);
    expect(values.map((v) => v.value)).toEqual(['hi', '7', '', 's3cret']);
  });
});
