import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { CliCommand, CliContext, CliOptions } from '../../src/cli/command.js';
import { command as allocationAdd } from '../../src/cli/commands/allocation-add.js';
import { command as eggImport } from '../../src/cli/commands/egg-import.js';
import { command as serverCreate } from '../../src/cli/commands/server-create.js';
import { renderStartup, shellStartup, startupValues } from '../../src/modules/eggs/egg-runtime.js';
import { setServerVariable, serverVariableValues } from '../../src/modules/eggs/eggs.repository.js';
import { findServerByReference } from '../../src/modules/servers/servers.repository.js';
import { daemonServer, daemonServerForPower } from '../../src/modules/servers/servers.service.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';

/**
 * What a server made from an egg runs with (docs/reference/eggs-and-installs.md): the startup command
 * (rendered for people, in the shell's form for the daemon), its environment,
 * done lines, stop command and config files, as daemonServerForPower (every
 * door that starts a server) composes them.
 */

const GREETER = path.resolve(import.meta.dirname, '../fixtures/eggs/own/greeter.json');
const run$ = promisify(execFile);

describe('startup rendering', () => {
  const values = { GREETING: 'hi', SERVER_PORT: '25565', SERVER_MEMORY: '1024', NAME: '{{GREETING}}' };

  it('fills {{NAME}} placeholders once, leaves unknown ones and other forms as written', () => {
    expect(renderStartup('java -Xmx{{SERVER_MEMORY}}M -jar x --port {{SERVER_PORT}} {{GREETING}}', values)).toBe(
      'java -Xmx1024M -jar x --port 25565 hi',
    );
    expect(renderStartup('say {{NAME}} {{UNKNOWN}} ${GREETING} {{ GREETING }}', values)).toBe(
      'say {{GREETING}} {{UNKNOWN}} ${GREETING} {{ GREETING }}',
    );
  });

  it("gives the shell ${NAME} for each placeholder, as Pterodactyl's images do", () => {
    expect(shellStartup('./run {{GREETING}} --port={{SERVER_PORT}} "${HOME}"')).toBe(
      './run ${GREETING} --port=${SERVER_PORT} "${HOME}"',
    );
  });

  it('startup values: memory always, address and port only with an allocation', () => {
    const server = { uuid: 'u', node: 'local', startup: 'x', memory_mib: 512, cpu_percent: 0, disk_mib: 0 };
    expect(startupValues({ server, primary: undefined, variables: [{ env_variable: 'A', value: '1' }] })).toEqual({
      A: '1',
      SERVER_MEMORY: '512',
    });
  });
});

describeEachDatabase('an egg server at its start', (database) => {
  const h = useHarness(database);
  const ctx = (): CliContext => ({ config: h.config, database: h.db, daemon: h.daemon, clock: h.clock });
  const run = (command: CliCommand, options: CliOptions) => command.run(ctx(), options);

  it('composes startup, environment, done lines, stop and config files in daemonServerForPower', async () => {
    const egg = await run(eggImport, { file: GREETER });
    const owner = (await h.make.user()).user.username;
    await run(allocationAdd, { ip: '127.0.0.1', ports: '27411' });
    const created = await run(serverCreate, {
      owner,
      name: 'greeter',
      egg: String(egg.id),
      allocation: '127.0.0.1:27411',
      memory: '768',
      variable: ['GREETING=hola', 'PLAYER_NAME=a; touch pwned #'],
    });
    const server = (await findServerByReference(h.db.db, created.uuid as string))!;
    const target = await daemonServerForPower(h.db.db, server);

    expect(target.startup).toBe(
      'sh ./greeter.sh ${GREETING} --port=${SERVER_PORT} --memory=${SERVER_MEMORY} --name="${PLAYER_NAME}"',
    );
    expect(target.image).toBe('ghcr.io/quetzal/greeter:1');
    expect(target.stopCommand).toBe('stop');
    expect(target.doneLines).toEqual(['Greeter ready', 'Greeter up']);
    expect(target.environment).toEqual({
      STARTUP: server.startup,
      SERVER_MEMORY: '768',
      SERVER_IP: '127.0.0.1',
      SERVER_PORT: '27411',
      P_SERVER_LOCATION: 'local',
      P_SERVER_UUID: server.uuid,
      GREETING: 'hola',
      MAX_PLAYERS: '20',
      PLAYER_NAME: 'a; touch pwned #',
      SECRET_TOKEN: 's3cret',
    });
    expect(target.configFiles).toEqual([
      {
        file: 'server.properties',
        parser: 'properties',
        find: { 'server-port': '27411', 'server-ip': '127.0.0.1', greeting: 'hola', 'max-players': '20', memory: '768' },
      },
      {
        file: 'proxy.yml',
        parser: 'yaml',
        find: { 'servers.*.address': { '127.0.0.1': '127.0.0.1' }, 'listeners[0].query_port': '25577' },
      },
    ]);
    // For people (GET /startup): the values in place.
    expect(
      renderStartup(
        server.startup!,
        startupValues({ server, primary: target.allocations![0], variables: await serverVariableValues(h.db.db, server.id) }),
      ),
    ).toBe('sh ./greeter.sh hola --port=27411 --memory=768 --name="a; touch pwned #"');

    // A value set later is what the next start gets.
    const greeting = (await serverVariableValues(h.db.db, server.id)).find((v) => v.env_variable === 'GREETING')!;
    await setServerVariable(h.db.db, server.id, greeting.id, 'hi', h.clock.now());
    expect((await daemonServerForPower(h.db.db, server)).environment!['GREETING']).toBe('hi');
    expect((await daemonServerForPower(h.db.db, server)).configFiles![0]!.find['greeting']).toBe('hi');

    // The shell the daemon runs expands the environment and never parses a value as code.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-greeter-'));
    fs.writeFileSync(path.join(dir, 'greeter.sh'), 'printf "%s|" "$@"; echo; echo "STARTUP=$STARTUP"\n');
    const { stdout } = await run$('/bin/sh', ['-c', target.startup!], {
      cwd: dir,
      env: { PATH: process.env.PATH, ...target.environment, GREETING: 'hi' },
    });
    expect(stdout.split('\n')[0]).toBe('hi|--port=27411|--memory=768|--name=a; touch pwned #|');
    expect(stdout).toContain(`STARTUP=${server.startup}`);
    expect(fs.existsSync(path.join(dir, 'pwned'))).toBe(false);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('leaves a server without an egg as it was: its startup as written, no environment', async () => {
    const { server } = await h.make.ownedServer({ startup: 'echo {{NOT_A_PLACEHOLDER}}' });
    const target = await daemonServerForPower(h.db.db, server);
    expect(target).toEqual({ ...daemonServer(server), allocations: [] });
    expect(target.startup).toBe('echo {{NOT_A_PLACEHOLDER}}');
    expect(target.environment).toBeUndefined();
  });
});
