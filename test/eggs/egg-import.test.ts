import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import type { CliCommand, CliContext, CliOptions } from '../../src/cli/command.js';
import { CliError } from '../../src/cli/command.js';
import { command as eggImport } from '../../src/cli/commands/egg-import.js';
import { command as eggList } from '../../src/cli/commands/egg-list.js';
import { findEgg, listEggVariables, setServerVariable } from '../../src/modules/eggs/eggs.repository.js';
import { eggConfigFiles, eggDoneLines } from '../../src/modules/eggs/eggs.service.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';
import { scratchDir } from '../helpers/scratch.js';

/**
 * egg:import and egg:list (docs/reference/eggs-and-installs.md, docs/reference/configuration.md) on real egg files:
 * Pterodactyl's seeders (PTDL_v1 and PTDL_v2) and Pelican's (PLCN_v1, PLCN_v3).
 */

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/eggs');
const PTERODACTYL = path.join(FIXTURES, 'pterodactyl');
const fixture = (...parts: string[]) => path.join(FIXTURES, ...parts);

describeEachDatabase('egg:import', (database) => {
  const h = useHarness(database);
  const ctx = (): CliContext => ({ config: h.config, database: h.db, daemon: h.daemon, clock: h.clock });
  const run = (command: CliCommand, options: CliOptions) => command.run(ctx(), options);
  const tmp = scratchDir('quetzal-eggs-');
  const write = (name: string, egg: unknown) => {
    const file = path.join(tmp, name);
    fs.writeFileSync(file, typeof egg === 'string' ? egg : JSON.stringify(egg));
    return file;
  };
  const countRows = async () => ({
    eggs: Number(
      (
        await h.db.db
          .selectFrom('eggs')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    ),
    variables: Number(
      (
        await h.db.db
          .selectFrom('egg_variables')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    ),
  });

  it("imports every egg of Pterodactyl's seeders, and egg:list shows them with their images", async () => {
    const files = fs.readdirSync(PTERODACTYL).filter((f) => f.endsWith('.json'));
    expect(files.length).toBeGreaterThanOrEqual(14);
    const ids: number[] = [];
    for (const file of files) {
      const egg = JSON.parse(fs.readFileSync(path.join(PTERODACTYL, file), 'utf8'));
      const result = await run(eggImport, { file: path.join(PTERODACTYL, file) });
      expect(result).toEqual({ id: expect.any(Number), name: egg.name });
      ids.push(result.id as number);
      const variables = await listEggVariables(h.db.db, result.id as number);
      expect(variables.map((v) => v.env_variable)).toEqual(egg.variables.map((v: { env_variable: string }) => v.env_variable));
    }
    const listed = (await run(eggList, {})).eggs as { id: number; name: string; docker_images: string[] }[];
    const paper = listed.find((e) => e.name === 'Paper')!;
    expect(paper.docker_images[0]).toBe('ghcr.io/pterodactyl/yolks:java_21');
    expect(paper.docker_images).toContain('ghcr.io/pterodactyl/yolks:java_8');
    // PTDL_v1's `images` list becomes the image list.
    const ark = listed.find((e) => e.name === 'Ark: Survival Evolved')!;
    expect(ark.docker_images).toEqual(['quay.io/parkervcp/pterodactyl-images:debian_source']);
    expect(new Set(listed.map((e) => e.id))).toEqual(new Set(ids));
  });

  it('keeps what a start needs: done lines, config files, stop, the install script; PTDL_v2', async () => {
    const { id } = await run(eggImport, { file: fixture('pterodactyl', 'egg-paper.json') });
    const egg = (await findEgg(h.db.db, id as number))!;
    // Pterodactyl's seeder files carry no uuid: one derived from author and name makes a re-import update it.
    expect(egg.uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(await run(eggImport, { file: fixture('pterodactyl', 'egg-paper.json') })).toEqual({ id, name: 'Paper' });
    expect(egg.startup).toContain('-jar {{SERVER_JARFILE}}');
    expect(egg.config_stop).toBe('stop');
    expect(eggDoneLines(egg)).toEqual([')! For help, type ']);
    expect(eggConfigFiles(egg)['server.properties']).toEqual({
      parser: 'properties',
      find: {
        'server-ip': '0.0.0.0',
        'server-port': '{{server.build.default.port}}',
        'query.port': '{{server.build.default.port}}',
      },
    });
    expect(egg.script_container).toBe('ghcr.io/pterodactyl/installers:alpine');
    expect(egg.script_entrypoint).toBe('ash');
    expect(egg.script_install).toContain('/mnt/server');
    const [version] = await listEggVariables(h.db.db, id as number);
    expect(version).toMatchObject({
      env_variable: 'MINECRAFT_VERSION',
      default_value: 'latest',
      rules: 'nullable|string|max:20',
    });
  });

  it('imports Pelican exports: PLCN_v1 (rules as lists), PLCN_v3 (startup_commands), a v2 image list', async () => {
    const v1 = await run(eggImport, { file: fixture('pelican', 'egg-vanilla-bedrock.PLCN_v1.json') });
    const v1Vars = await listEggVariables(h.db.db, v1.id as number);
    expect(v1Vars[0]).toMatchObject({ env_variable: 'BEDROCK_VERSION', rules: 'required|string|max:20', user_editable: 1 });
    expect(eggConfigFiles((await findEgg(h.db.db, v1.id as number))!)['server.properties']!.find['server-port']).toBe(
      '{{server.allocations.default.port}}',
    );
    const v3 = await run(eggImport, { file: fixture('pelican', 'egg-pocketmine-m-p.PLCN_v3.json') });
    const v3Egg = (await findEgg(h.db.db, v3.id as number))!;
    expect(v3Egg.startup).toBe('./bin/php7/bin/php ./PocketMine-MP.phar --no-wizard');
    expect((await listEggVariables(h.db.db, v3.id as number))[0]!.rules).toBe('required|string|in:PM5,PM5PHP83,PM5PHP84,PM4');
    const list = await run(eggImport, { file: fixture('pelican', 'egg-feather.PTDL_v2-image-list.json') });
    expect(JSON.parse((await findEgg(h.db.db, list.id as number))!.docker_images)).toEqual({
      'ghcr.io/parkervcp/yolks:debian': 'ghcr.io/parkervcp/yolks:debian',
    });
  });

  it('re-importing an egg of the same uuid updates it and its variables; servers keep their values', async () => {
    const base = JSON.parse(fs.readFileSync(fixture('pterodactyl', 'egg-vanilla-minecraft.json'), 'utf8'));
    base.uuid = '0f5b7f0e-1a39-4d0a-9d43-3b7a8b1c0001';
    const first = await run(eggImport, { file: write('first.json', base) });
    const variables = await listEggVariables(h.db.db, first.id as number);
    const jar = variables.find((v) => v.env_variable === 'SERVER_JARFILE')!;
    const { server } = await h.make.ownedServer();
    await h.db.db
      .updateTable('servers')
      .set({ egg_id: first.id as number })
      .where('id', '=', server.id)
      .execute();
    await setServerVariable(h.db.db, server.id, jar.id, 'custom.jar', h.clock.now());

    const changed = structuredClone(base);
    changed.name = 'Vanilla (renamed)';
    changed.variables = changed.variables.filter((v: { env_variable: string }) => v.env_variable === 'SERVER_JARFILE');
    changed.variables[0].default_value = 'new-default.jar';
    changed.variables.push({ name: 'Extra', env_variable: 'EXTRA', default_value: 'x', rules: 'nullable|string' });
    const before = await countRows();
    const second = await run(eggImport, { file: write('second.json', changed) });
    expect(second).toEqual({ id: first.id, name: 'Vanilla (renamed)' });
    const after = await listEggVariables(h.db.db, first.id as number);
    expect(after.map((v) => v.env_variable)).toEqual(['SERVER_JARFILE', 'EXTRA']);
    expect(after[0]).toMatchObject({ id: jar.id, default_value: 'new-default.jar' });
    expect(await countRows()).toEqual({ eggs: before.eggs, variables: before.variables - variables.length + 2 });
    const value = await h.db.db.selectFrom('server_variables').selectAll().where('server_id', '=', server.id).execute();
    expect(value.map((v) => [v.variable_id, v.variable_value])).toEqual([[jar.id, 'custom.jar']]);
  });

  it('refuses an invalid egg with one line saying why, and writes nothing', async () => {
    const good = JSON.parse(fs.readFileSync(fixture('pterodactyl', 'egg-paper.json'), 'utf8'));
    const cases: [unknown, RegExp][] = [
      ['{not json', /is not a valid egg: the file is not JSON/],
      [{ ...good, meta: { version: 'PTDL_v9' } }, /unrecognised egg format "PTDL_v9"/],
      [{ ...good, name: '' }, /name must not be empty/],
      [{ ...good, docker_images: {} }, /names no docker image/],
      [{ ...good, startup: undefined }, /has no startup command/],
      [{ ...good, config: { ...good.config, files: '{"a": ' } }, /config.files is not valid JSON/],
      [{ ...good, config: { ...good.config, files: '{"x.cfg": {"parser": "toml", "find": {}}}' } }, /unknown parser "toml"/],
      [{ ...good, config: { ...good.config, files: '{"../x": {"parser": "file", "find": {}}}' } }, /inside the server's folder/],
      [
        {
          ...good,
          variables: [...good.variables, { ...good.variables[1], env_variable: 'OTHER', rules: 'required|exists:users' }],
        },
        /unsupported validation rule "exists"/,
      ],
      [{ ...good, variables: [...good.variables, { ...good.variables[0] }] }, /appears twice/],
      [
        { ...good, variables: [{ ...good.variables[0], env_variable: 'SERVER_PORT' }] },
        /variable SERVER_PORT uses a name the panel sets itself/,
      ],
      [{ ...good, variables: [{ ...good.variables[0], env_variable: 'A B' }] }, /env_variable must be a shell variable name/],
    ];
    const before = await countRows();
    for (const [egg, reason] of cases) {
      const file = write('bad.json', egg);
      const error = await run(eggImport, { file }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CliError);
      expect((error as Error).message).toMatch(reason);
      expect((error as Error).message).not.toContain('\n');
    }
    expect(await countRows()).toEqual(before);
    await expect(run(eggImport, { file: path.join(tmp, 'missing.json') })).rejects.toThrow(/is not a readable file/);
  });
});
