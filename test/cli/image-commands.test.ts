/**
 * The image commands through the real binary (docs/reference/eggs-and-installs.md, docs/reference/cli.md):
 * image:import (a `docker save` archive the test makes), image:list,
 * image:remove refused while a server row names the image and for host, and
 * what a SIGKILL of image:import or image:build midway leaves: never a half
 * image as the current one, a staging folder the next sweep removes, and no
 * tool still running.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { imageKey } from '../../src/daemon/local/images/image-store.js';
import { makeImageArchive } from '../daemon/local/images/fixtures.js';
import { CliError, type CliCommand, type CliContext, type CliOptions } from '../../src/cli/command.js';
import { command as imageImport } from '../../src/cli/commands/image-import.js';
import { command as imageList } from '../../src/cli/commands/image-list.js';
import { command as imageRemove } from '../../src/cli/commands/image-remove.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';
import { BIN, createSandbox, quetzal, quetzalJson, type CliSandbox } from './helpers.js';

let workDir: string;
let archiveOne: string;
let archiveTwo: string;
beforeAll(() => {
  workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-image-cli-'));
  archiveOne = makeImageArchive(workDir, 'one', 'docker');
  archiveTwo = makeImageArchive(workDir, 'two', 'docker');
});
afterAll(() => fs.rmSync(workDir, { recursive: true, force: true }));

const NAME = 'ghcr.io/pterodactyl/yolks:fixture';

function markerOf(dataDir: string, name: string): string {
  const key = imageKey(name);
  const record = JSON.parse(fs.readFileSync(path.join(dataDir, 'images', key, 'image.json'), 'utf8')) as { version: string };
  return fs.readFileSync(path.join(dataDir, 'images', key, record.version, 'rootfs/etc/quetzal-marker'), 'utf8').trim();
}

describeEachDatabase('image commands', (database) => {
  const h = useHarness(database);
  const ctx = (): CliContext => ({ config: h.config, database: h.db, daemon: h.daemon, clock: h.clock });
  const run = (command: CliCommand, options: CliOptions) => command.run(ctx(), options);

  it('imports, lists, refuses to remove an image a server names (and host), then removes it', async () => {
    const name = `${NAME}-${database.name}`;
    const imported = await run(imageImport, { name, file: archiveOne });
    expect(imported).toEqual({ name, size_bytes: expect.any(Number) });
    expect(imported.size_bytes).toBeGreaterThan(100_000);
    const listed = (await run(imageList, {})).images as { name: string }[];
    expect(listed[0]).toEqual({ name: 'host', size_bytes: 0, source: 'host', created_at: null });
    expect(listed).toContainEqual({
      name,
      size_bytes: imported.size_bytes,
      source: 'import',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(markerOf(h.dataDir, name)).toBe('one');

    const { server } = await h.make.ownedServer();
    await h.db.db.updateTable('servers').set({ image: name }).where('id', '=', server.id).execute();
    await expect(run(imageRemove, { name })).rejects.toThrow(new CliError(`the image ${name} is used by server ${server.uuid}`));
    await expect(run(imageRemove, { name: 'host' })).rejects.toThrow(/host.*cannot be removed/);
    expect(((await run(imageList, {})).images as { name: string }[]).map((image) => image.name)).toContain(name);

    await h.db.db.updateTable('servers').set({ image: null }).where('id', '=', server.id).execute();
    expect(await run(imageRemove, { name })).toEqual({ removed: true });
    expect(((await run(imageList, {})).images as { name: string }[]).map((image) => image.name)).not.toContain(name);
    // Its record is gone at once; its folder at a sweep after the grace period (image-store.test.ts).
    expect(fs.existsSync(path.join(h.dataDir, 'images', imageKey(name), 'image.json'))).toBe(false);
    await expect(run(imageRemove, { name })).rejects.toThrow(`no image named ${name}`);
  });
});

describe('image commands killed midway', () => {
  let box: CliSandbox;
  beforeAll(async () => {
    box = await createSandbox('sqlite');
  });
  afterAll(async () => box.dispose());

  const keyDir = (name: string) => path.join(box.dataDir, 'images', imageKey(name));

  it('an import SIGKILLed with its tree staged leaves the old version current; the next import sweeps the staging', async () => {
    expect(await quetzalJson(['image:import', '--name', NAME, '--file', archiveOne], box.env)).toEqual({
      name: NAME,
      size_bytes: expect.any(Number),
    });
    const killed = await quetzal(['image:import', '--name', NAME, '--file', archiveTwo, '--json'], {
      ...box.env,
      QUETZAL_TEST_CRASH_AT: 'image-staged',
    });
    expect(killed.code).toBeNull();
    expect(killed.stdout).toBe('');
    const staged = fs.readdirSync(keyDir(NAME)).filter((entry) => entry.startsWith('.staging-'));
    expect(staged).toHaveLength(1);
    // A whole tree was staged, and yet the image is still the first one.
    expect(fs.readFileSync(path.join(keyDir(NAME), staged[0]!, 'rootfs/etc/quetzal-marker'), 'utf8')).toBe('two\n');
    expect(markerOf(box.dataDir, NAME)).toBe('one');

    await quetzalJson(['image:import', '--name', 'other/image', '--file', archiveTwo], box.env);
    expect(fs.readdirSync(keyDir(NAME)).filter((entry) => entry.startsWith('.staging-'))).toEqual([]);
    expect(markerOf(box.dataDir, NAME)).toBe('one');
    // A failure is one line on standard error and nothing on standard output.
    const refused = await quetzal(['image:remove', '--name', 'host', '--json'], box.env);
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr).toMatch(/^quetzal: [^\n]*host[^\n]*cannot be removed\n$/);
    const notAnArchive = await quetzal(['image:import', '--name', 'x/y', '--file', '/etc/hostname', '--json'], box.env);
    expect(notAnArchive).toMatchObject({ code: 1, stdout: '' });
    expect(notAnArchive.stderr).toMatch(/^quetzal: [^\n]*neither a docker save archive[^\n]*\n$/);
  }, 120_000);

  it('a build SIGKILLed while mmdebstrap runs leaves no image, no tool running, and a staging the next sweep removes', async () => {
    const name = 'killed/build:1';
    const child = spawn(process.execPath, [BIN, 'image:build', '--name', name, '--packages', 'busybox', '--json'], {
      cwd: box.dataDir,
      env: { ...process.env, ...box.env },
      stdio: 'ignore',
    });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    // mmdebstrap has begun once it made its target folder inside the staging.
    const deadline = Date.now() + 60_000;
    let staging: string | undefined;
    while (staging === undefined) {
      if (Date.now() > deadline) throw new Error('the build never staged anything');
      const entries = fs.existsSync(keyDir(name)) ? fs.readdirSync(keyDir(name)) : [];
      const found = entries.find((entry) => entry.startsWith('.staging-'));
      if (found && fs.existsSync(path.join(keyDir(name), found, 'rootfs'))) staging = path.join(keyDir(name), found);
      else await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    child.kill('SIGKILL');
    await exited;

    // The tools die with it (setpriv's parent-death signal, unshare --kill-child, their own PID namespace).
    const toolsLeft = () => {
      const out = execFileSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' });
      return out.split('\n').filter((line) => line.includes(staging!) && !line.includes('ps -eo'));
    };
    const toolDeadline = Date.now() + 10_000;
    while (toolsLeft().length > 0 && Date.now() < toolDeadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(toolsLeft()).toEqual([]);

    const listed = await quetzalJson(['image:list'], box.env);
    expect(listed.images.map((image: { name: string }) => image.name)).not.toContain(name);
    expect(fs.existsSync(path.join(keyDir(name), 'image.json'))).toBe(false);
    // The next command that sweeps removes the dead build's staging, and its key folder with it.
    await quetzalJson(['image:import', '--name', 'other/image', '--file', archiveOne], box.env);
    expect(fs.existsSync(keyDir(name))).toBe(false);
  }, 120_000);
});
