/**
 * docs/reference/eggs-and-installs.md end to end on the local daemon: a server created from an egg starts
 * with the egg's command filled in, its environment as docs/reference/eggs-and-installs.md lists, its
 * config file edited before the start, `starting` until the egg's done line
 * and `running` after; a variable's value reaches the command as a value,
 * never as shell code.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import type { CliContext } from '../../src/cli/command.js';
import { command as allocationAdd } from '../../src/cli/commands/allocation-add.js';
import { command as eggImport } from '../../src/cli/commands/egg-import.js';
import { command as serverCreate } from '../../src/cli/commands/server-create.js';
import { findServerByReference } from '../../src/modules/servers/servers.repository.js';
import { daemonServerForPower } from '../../src/modules/servers/servers.service.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';

const GREETER = path.resolve(import.meta.dirname, '../fixtures/eggs/own/greeter.json');

describeEachDatabase('a server made from an egg, started', (database) => {
  const h = useHarness(database);

  it(
    'runs the filled command with docs/reference/eggs-and-installs.md environment, its config file edited, starting until the done line',
    { timeout: 60_000 },
    async () => {
      const ctx = (): CliContext => ({ config: h.config, database: h.db, daemon: h.daemon, clock: h.clock });
      const egg = await eggImport.run(ctx(), { file: GREETER });
      const owner = (await h.make.user()).user.username;
      await allocationAdd.run(ctx(), { ip: '127.0.0.1', ports: '27499' });
      const created = await serverCreate.run(ctx(), {
        owner,
        name: 'greeter',
        egg: String(egg.id),
        image: 'host',
        allocation: '127.0.0.1:27499',
        variable: ['PLAYER_NAME=a; touch pwned #'],
      });
      const server = (await findServerByReference(h.db.db, created.uuid as string))!;
      const volume = path.join(h.config.dataDir, 'volumes', server.uuid);
      // The program the egg's install script would write: prints its arguments and environment, then its done line.
      fs.writeFileSync(
        path.join(volume, 'greeter.sh'),
        'printf "%s|" "$@"; echo; env | sort; sleep 0.3; echo Greeter ready; while read line; do [ "$line" = stop ] && exit 0; done\n',
      );
      fs.writeFileSync(path.join(volume, 'server.properties'), 'server-port=1\nmotd=x\n');
      const target = await daemonServerForPower(h.db.db, server);
      const lines: string[] = [];
      const states: string[] = [];
      const unsubscribe = h.daemon.onStateChange((uuid, state) => {
        if (uuid === server.uuid) states.push(state);
      });
      const stopWatching = h.daemon.watchConsole(target, (line) => lines.push(line));
      try {
        await h.daemon.power(target, 'start');
        expect(await h.daemon.state(target)).toBe('starting');
        for (let i = 0; i < 100 && !states.includes('running'); i++) await new Promise((resolve) => setTimeout(resolve, 100));
        expect(lines.some((line) => line.includes('Greeter ready'))).toBe(true);
        expect(states.slice(0, 2)).toEqual(['starting', 'running']);
        expect(lines[0]).toBe('hello|--port=27499|--memory=0|--name=a; touch pwned #|');
        for (const variable of [
          'GREETING=hello',
          'SERVER_PORT=27499',
          'SERVER_IP=127.0.0.1',
          'SERVER_MEMORY=0',
          'P_SERVER_LOCATION=local',
        ])
          expect(lines).toContain(variable);
        expect(lines).toContain(`P_SERVER_UUID=${server.uuid}`);
        expect(lines.some((line) => line.startsWith('STARTUP='))).toBe(true);
        expect(fs.readFileSync(path.join(volume, 'server.properties'), 'utf8')).toMatch(/^server-port=27499$/m);
        expect(fs.existsSync(path.join(volume, 'pwned'))).toBe(false);
      } finally {
        await h.daemon.power(target, 'kill');
        stopWatching();
        unsubscribe();
      }
    },
  );
});
