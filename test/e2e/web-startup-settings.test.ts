import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { auditPage, launchBrowser, newPage, signIn, startConsoleService, type ConsoleService } from './helpers.js';
import { screenshots } from './files-helpers.js';
import { freePort } from '../platform/service-process.js';

/**
 * The Startup and Settings sections (docs/reference/eggs-and-installs.md): variables saved one by one
 * with the API's errors shown beside them, the image picked among the egg's,
 * rename, SFTP details and reinstall behind a confirmation; screenshots at
 * 1280 and 375 px in docs/screenshots.
 */

let svc: ConsoleService;
let browser: Browser;
let db: DatabaseHandle;
let server: { uuid: string; identifier: string };
let token: string;

const api = async (url: string) => {
  const res = await fetch(`${svc.base}/api/client${url}`, {
    headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
  });
  expect(res.status, url).toBe(200);
  return (await res.json()) as any;
};

beforeAll(async () => {
  // SFTP on (a free port), so that the Settings section shows where it answers.
  [svc, browser] = await Promise.all([startConsoleService({ SFTP_PORT: String(await freePort()) }), launchBrowser()]);
  await svc.user('grace', 'grace-password-1');
  server = await svc.cli(['server:create', '--owner', 'grace', '--name', 'Survival', '--memory', '2048']);
  ({ token } = await svc.cli<{ token: string }>(['key:create', '--user', 'grace']));
  // The egg as egg:import stores it, written straight into the service's database.
  db = openDatabase(`sqlite:${path.join(svc.service.dataDir, 'quetzal.sqlite')}`);
  const now = Date.now();
  const egg = await db.db
    .insertInto('eggs')
    .values({
      uuid: '5e1b3c9a-0000-4000-8000-000000000001',
      name: 'Paper',
      docker_images: JSON.stringify({
        'Java 17': 'ghcr.io/pterodactyl/yolks:java_17',
        'Java 21': 'ghcr.io/pterodactyl/yolks:java_21',
      }),
      startup: 'java -Xms128M -Xmx{{SERVER_MEMORY}}M -jar {{SERVER_JARFILE}} --max-players {{MAX_PLAYERS}}',
      config_stop: 'stop',
      config_startup: '{}',
      config_files: '{}',
      file_denylist: '[]',
      features: '[]',
      created_at: now,
      updated_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const variable = (sort: number, env: string, name: string, value: string, rules: string, editable = 1) => ({
    egg_id: egg.id,
    sort,
    name,
    description: `The ${name.toLowerCase()} the server starts with.`,
    env_variable: env,
    default_value: value,
    user_viewable: 1,
    user_editable: editable,
    rules,
    created_at: now,
    updated_at: now,
  });
  await db.db
    .insertInto('egg_variables')
    .values([
      variable(0, 'SERVER_JARFILE', 'Server jar file', 'server.jar', 'required|regex:/^([\\w\\d._-]+)(\\.jar)$/'),
      variable(1, 'MAX_PLAYERS', 'Max players', '20', 'required|integer|between:1,100'),
      variable(2, 'BUILD_NUMBER', 'Build number', 'latest', 'required|string|max:20', 0),
    ])
    .execute();
  await db.db
    .updateTable('servers')
    .set({
      egg_id: egg.id,
      image: 'ghcr.io/pterodactyl/yolks:java_17',
      startup: 'java -Xms128M -Xmx{{SERVER_MEMORY}}M -jar {{SERVER_JARFILE}} --max-players {{MAX_PLAYERS}}',
    })
    .where('uuid', '=', server.uuid)
    .execute();
});

afterAll(async () => {
  await db?.close();
  await browser?.close();
  await svc?.stop();
});

describe('the web console: startup and settings', () => {
  it('saves a variable (its rule error shown first), picks an image, and shows the command filled in', async () => {
    const { page, errors } = await newPage(browser);
    await signIn(page, svc.base, 'grace', 'grace-password-1', `/server/${server.identifier}/startup`);
    await page.getByRole('link', { name: 'Startup' }).waitFor();
    const command = page.getByLabel('Startup command');
    await command.getByText('java -Xms128M -Xmx2048M -jar server.jar --max-players 20').waitFor();
    const players = page.getByRole('form', { name: 'Max players' });
    await players.getByRole('textbox', { name: 'Max players' }).fill('500');
    await players.getByRole('button', { name: 'Save Max players' }).click();
    await players.getByRole('alert').getByText('The value must be between 1 and 100.').waitFor();
    await players.getByRole('textbox', { name: 'Max players' }).fill('64');
    await players.getByRole('button', { name: 'Save Max players' }).click();
    await command.getByText('--max-players 64').waitFor();
    expect(await page.getByRole('textbox', { name: 'Build number' }).isDisabled()).toBe(true);

    await page.getByRole('combobox', { name: 'Image' }).selectOption('ghcr.io/pterodactyl/yolks:java_21');
    await page.getByRole('button', { name: 'Save image' }).click();
    await page.getByRole('button', { name: 'Save image' }).and(page.locator(':disabled')).waitFor();
    const shown = await api(`/servers/${server.identifier}`);
    expect(shown.attributes.docker_image).toBe('ghcr.io/pterodactyl/yolks:java_21');
    const startup = await api(`/servers/${server.identifier}/startup`);
    expect(startup.data[1].attributes.server_value).toBe('64');

    await auditPage(page, 'startup');
    await screenshots(page, 'startup');
    expect(errors).toEqual([]);
  });

  it('renames, shows the SFTP details, and asks before a reinstall', async () => {
    const { page, errors } = await newPage(browser);
    await signIn(page, svc.base, 'grace', 'grace-password-1', `/server/${server.identifier}/settings`);
    await page.getByRole('textbox', { name: 'Server name' }).fill('Survival 2');
    await page.getByRole('textbox', { name: 'Description' }).fill('Our world since 2026');
    await page.getByRole('button', { name: 'Save name' }).click();
    await page.getByRole('heading', { name: 'Survival 2', level: 1 }).waitFor();
    const shown = await api(`/servers/${server.identifier}`);
    expect(shown.attributes).toMatchObject({ name: 'Survival 2', description: 'Our world since 2026' });
    await page.getByText(`grace.${server.identifier}`).waitFor();
    await page.getByText(`sftp://${shown.attributes.sftp_details.ip}:${shown.attributes.sftp_details.port}`).waitFor();
    expect(shown.attributes.sftp_details.port).toBeGreaterThan(0);

    await page.getByRole('button', { name: 'Reinstall server' }).click();
    const dialog = page.getByRole('dialog', { name: 'Reinstall this server?' });
    await dialog.waitFor();
    await auditPage(page, 'settings-dialog');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await page.getByRole('button', { name: 'Reinstall server' }).click();
    const sent = page.waitForRequest((request) => request.url().endsWith('/settings/reinstall') && request.method() === 'POST');
    await dialog.getByRole('button', { name: 'Yes, reinstall' }).click();
    await sent;
    // The route is the installs module's: its answer (202, or an error shown in the dialog) is what the page shows.
    await page.getByRole('status').getByText('The server is reinstalling').or(dialog.getByRole('alert')).waitFor();
    if (await dialog.isVisible()) await dialog.getByRole('button', { name: 'Cancel' }).click();

    await auditPage(page, 'settings');
    await screenshots(page, 'settings');
    expect(errors).toEqual([]);
  });
});
