import { randomBytes, randomInt } from 'node:crypto';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { auditPage, eventually, launchBrowser, newPage, signIn, startConsoleService, type ConsoleService } from './helpers.js';

/**
 * The Network and Databases sections (docs/reference/network-and-allocations.md, docs/DATABASES.md):
 * allocations added up to the server's limit, notes saved in place, the
 * primary moved and the old one removed; databases created on this machine's
 * MariaDB, their password shown and rotated (the new one really connects),
 * deleted (really dropped), and the create buttons disabled with the reason
 * at the limit. Screenshots at 1280 and 375 px in test-results/.
 */

const run = randomBytes(3).toString('hex');
const HOST_NAME = `web-netdb-${run}`;
const MARIADB = { host: '127.0.0.1', port: 3306 } as const;

let svc: ConsoleService;
let browser: Browser;
let token: string;
let networkServer: { uuid: string; identifier: string };
let databaseServer: { uuid: string; identifier: string };
const firstPort = randomInt(20_000, 60_000);

interface AllocationAttributes {
  id: number;
  ip: string;
  port: number;
  notes: string | null;
  is_default: boolean;
}

interface DatabaseAttributes {
  id: string;
  name: string;
  username: string;
  relationships?: { password: { attributes: { password: string } | null } };
}

async function api<T>(url: string, method = 'GET', body?: unknown): Promise<T> {
  const res = await fetch(`${svc.base}/api/client${url}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      accept: 'application/json',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  expect(res.status, `${method} ${url}`).toBeLessThan(300);
  return (res.status === 204 ? undefined : await res.json()) as T;
}

const allocations = async () =>
  (
    await api<{ data: { attributes: AllocationAttributes }[] }>(`/servers/${networkServer.identifier}/network/allocations`)
  ).data.map((item) => item.attributes);

const databases = async () =>
  (
    await api<{ data: { attributes: DatabaseAttributes }[] }>(`/servers/${databaseServer.identifier}/databases?include=password`)
  ).data.map((item) => item.attributes);

/** Whether `user` with `password` can sign in to MariaDB and use `database`. */
async function connects(user: string, password: string, database: string): Promise<boolean> {
  try {
    const conn = await mysql.createConnection({ ...MARIADB, user, password, database });
    await conn.query('SELECT 1');
    await conn.end();
    return true;
  } catch {
    return false;
  }
}

async function schemaExists(database: string): Promise<boolean> {
  const root = await mysql.createConnection({ ...MARIADB, user: 'root' });
  try {
    const [rows] = await root.query('SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?', [database]);
    return (rows as unknown[]).length > 0;
  } finally {
    await root.end();
  }
}

/** Drops on MariaDB whatever this file's databases left there (their names carry `run`), should a test have failed half-way. */
async function dropLeftovers(): Promise<void> {
  const root = await mysql.createConnection({ ...MARIADB, user: 'root' });
  try {
    const [grants] = await root.query('SELECT DISTINCT User, Host FROM mysql.db WHERE Db LIKE ?', [`%${run}%`]);
    for (const { User, Host } of grants as { User: string; Host: string }[])
      await root.query('DROP USER IF EXISTS ?@?', [User, Host]);
    const [schemas] = await root.query('SELECT SCHEMA_NAME AS name FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE ?', [
      `%${run}%`,
    ]);
    for (const { name } of schemas as { name: string }[])
      await root.query(`DROP DATABASE IF EXISTS \`${name.replace(/`/g, '``')}\``);
  } finally {
    await root.end();
  }
}

beforeAll(async () => {
  [svc, browser] = await Promise.all([startConsoleService(), launchBrowser()]);
  await svc.user('nadia', 'nadia-password-1');
  ({ token } = await svc.cli<{ token: string }>(['key:create', '--user', 'nadia']));
  // Before any allocation exists, so that it takes none of them.
  databaseServer = await svc.cli(['server:create', '--owner', 'nadia', '--name', 'Data', '--database-limit', '2']);
  await svc.cli(['allocation:add', '--ip', '127.0.0.1', '--ports', `${firstPort}-${firstPort + 2}`]);
  networkServer = await svc.cli([
    'server:create',
    '--owner',
    'nadia',
    '--name',
    'Net',
    '--allocation',
    `127.0.0.1:${firstPort}`,
    '--allocation-limit',
    '2',
  ]);
  await svc.cli(['database-host:add', '--name', HOST_NAME, '--url', 'mysql://root:@127.0.0.1:3306']);
  // A subuser who may look but not change, nor see passwords.
  await svc.user('omar', 'omar-password-1');
  for (const server of [networkServer, databaseServer])
    await svc.cli(['subuser:add', '--server', server.uuid, '--user', 'omar', '--permissions', 'allocation.read,database.read']);
});

afterAll(async () => {
  // What a failed test left: through the API (drops on MariaDB too), then straight on MariaDB, then the host.
  if (svc && databaseServer) {
    for (const database of await databases().catch(() => []))
      await api(`/servers/${databaseServer.identifier}/databases/${database.id}`, 'DELETE').catch(() => undefined);
    await svc.cli(['database-host:remove', '--name', HOST_NAME]).catch(() => undefined);
  }
  await dropLeftovers();
  await browser?.close();
  await svc?.stop();
});

const allocationRow = (page: Page, port: number) => page.getByRole('listitem', { name: `Allocation 127.0.0.1:${port}` });

describe('the web console: network', () => {
  it('adds an allocation up to the limit, saves its notes, makes it primary and removes the old one', async () => {
    const { page, errors } = await newPage(browser);
    await signIn(page, svc.base, 'nadia', 'nadia-password-1', `/server/${networkServer.identifier}/network`);
    const first = allocationRow(page, firstPort);
    await first.getByText('Primary').waitFor();
    await page.getByText('Using 1 of 2 allowed allocations.').waitFor();

    const create = page.getByRole('button', { name: 'Create allocation' });
    await create.click();
    await page.getByText('Using 2 of 2 allowed allocations.').waitFor();
    const added = (await allocations()).find((allocation) => !allocation.is_default);
    expect(added).toBeDefined();
    const addedPort = added!.port;
    expect(addedPort).not.toBe(firstPort);
    const second = allocationRow(page, addedPort);
    await second.waitFor();
    // At the limit: disabled, and the reason is said beside it.
    expect(await create.isDisabled()).toBe(true);
    await page.getByText('This server has reached its limit of 2 allocations.').waitFor();
    expect(await create.getAttribute('aria-describedby')).toBe('create-allocation-reason');

    // Notes: Enter saves, and so does leaving the field.
    const notes = second.getByRole('textbox', { name: `Notes for 127.0.0.1:${addedPort}` });
    await notes.fill('Voice chat');
    await notes.press('Enter');
    await second.getByRole('status').getByText('Saved').waitFor();
    await eventually(async () => (await allocations()).find((a) => a.port === addedPort)?.notes === 'Voice chat');
    await notes.fill('Query port');
    await notes.press('Tab');
    await eventually(async () => (await allocations()).find((a) => a.port === addedPort)?.notes === 'Query port');
    await auditPage(page, 'network');

    await second.getByRole('button', { name: `Make primary 127.0.0.1:${addedPort}` }).click();
    await second.getByText('Primary').waitFor();
    await first.getByRole('button', { name: `Make primary 127.0.0.1:${firstPort}` }).waitFor();
    expect((await allocations()).find((a) => a.is_default)?.port).toBe(addedPort);
    // The primary has no Remove.
    expect(await second.getByRole('button', { name: /Remove/ }).count()).toBe(0);

    await first.getByRole('button', { name: `Remove allocation 127.0.0.1:${firstPort}` }).click();
    const dialog = page.getByRole('dialog', { name: 'Remove this allocation?' });
    await dialog.getByText(`127.0.0.1:${firstPort}`).waitFor();
    await dialog.getByRole('button', { name: 'Remove allocation' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await first.waitFor({ state: 'detached' });
    expect((await allocations()).map((a) => a.port)).toEqual([addedPort]);
    await page.getByText('Using 1 of 2 allowed allocations.').waitFor();
    expect(await create.isDisabled()).toBe(false);
    expect(await second.getByRole('textbox').inputValue()).toBe('Query port');
    expect(errors).toEqual([]);
  });

  it('says why a limit of 0 allows no databases, and no allocations', async () => {
    const { page, errors } = await newPage(browser);
    await signIn(page, svc.base, 'nadia', 'nadia-password-1', `/server/${networkServer.identifier}/databases`);
    await page.getByText('Databases cannot be created for this server.').waitFor();
    const create = page.getByRole('button', { name: 'New database' });
    expect(await create.isDisabled()).toBe(true);
    await page.locator('#create-database-reason').getByText('This server cannot have databases.').waitFor();

    await page.goto(`${svc.base}/server/${databaseServer.identifier}/network`);
    await page.getByText('This server has no allocations: it publishes no port.').waitFor();
    expect(await page.getByRole('button', { name: 'Create allocation' }).isDisabled()).toBe(true);
    await page
      .locator('#create-allocation-reason')
      .getByText("This server's allocation limit is 0: allocations cannot be added or removed here.")
      .waitFor();
    expect(errors).toEqual([]);
  });
});

describe('the web console: databases', () => {
  it('creates a database, shows and rotates its password, stops at the limit, and deletes', async () => {
    const { page, errors } = await newPage(browser);
    await signIn(page, svc.base, 'nadia', 'nadia-password-1', `/server/${databaseServer.identifier}/databases`);
    await page.getByText('This server has no databases yet.').waitFor();
    const create = page.getByRole('button', { name: 'New database' });

    await create.click();
    const form = page.getByRole('dialog', { name: 'New database' });
    await form.getByRole('textbox', { name: 'Database name' }).fill(`main_${run}`);
    expect(await form.getByRole('textbox', { name: 'Connections from' }).inputValue()).toBe('%');
    await form.getByRole('button', { name: 'Create database' }).click();
    await form.waitFor({ state: 'hidden' });

    const [created] = await databases();
    expect(created?.name).toMatch(new RegExp(`^s\\d+_main_${run}$`));
    const name = created!.name;
    const row = page.getByRole('listitem', { name: `Database ${name}` });
    await row.getByText(created!.username).waitFor();
    await row.getByText('127.0.0.1:3306').waitFor();
    await page.getByText('1 of 2 databases.').waitFor();

    await row.getByRole('button', { name: `Details of database ${name}` }).click();
    const details = page.getByRole('dialog', { name: 'Database connection details' });
    const password = details.getByRole('textbox', { name: 'Password', exact: true });
    const first = await eventually(async () => password.inputValue().catch(() => ''));
    expect(first).toBe(created!.relationships?.password.attributes?.password);
    expect(await connects(created!.username, first, name)).toBe(true);
    expect(await details.getByRole('textbox', { name: 'JDBC connection string' }).inputValue()).toBe(
      `jdbc:mysql://${created!.username}:${encodeURIComponent(first)}@127.0.0.1:3306/${name}`,
    );
    await auditPage(page, 'databases-details');

    await details.getByRole('button', { name: 'Rotate password' }).click();
    await details.getByRole('status').getByText('Password rotated').waitFor();
    const rotated = await eventually(async () => {
      const value = await password.inputValue();
      return value !== first && value;
    });
    expect((await databases())[0]?.relationships?.password.attributes?.password).toBe(rotated);
    expect(await connects(created!.username, rotated, name)).toBe(true);
    expect(await connects(created!.username, first, name)).toBe(false);
    await details.getByRole('button', { name: 'Close' }).click();
    await details.waitFor({ state: 'hidden' });

    // The API's refusal (a name the server has already) is shown in the dialog, beside the form.
    await create.click();
    await form.getByRole('textbox', { name: 'Database name' }).fill(`main_${run}`);
    await form.getByRole('button', { name: 'Create database' }).click();
    await form.getByRole('alert').getByText('The database name you have selected is already in use by this server.').waitFor();
    // A second one reaches the limit of 2: the button is disabled, with the reason.
    await form.getByRole('textbox', { name: 'Database name' }).fill(`logs_${run}`);
    await form.getByRole('button', { name: 'Create database' }).click();
    await form.waitFor({ state: 'hidden' });
    await page.getByText('2 of 2 databases.').waitFor();
    expect(await create.isDisabled()).toBe(true);
    await page.getByText('This server has reached its limit of 2 databases.').waitFor();
    expect(await create.getAttribute('aria-describedby')).toBe('create-database-reason');
    await auditPage(page, 'databases');

    for (const database of await databases()) {
      await page.getByRole('button', { name: `Delete database ${database.name}` }).click();
      const confirm = page.getByRole('dialog', { name: 'Delete this database?' });
      await confirm.getByText(database.name).waitFor();
      await confirm.getByRole('button', { name: 'Delete database' }).click();
      await confirm.waitFor({ state: 'hidden' });
      await page.getByRole('listitem', { name: `Database ${database.name}` }).waitFor({ state: 'detached' });
      expect(await schemaExists(database.name)).toBe(false);
      expect(await connects(database.username, database.relationships?.password.attributes?.password ?? '', database.name)).toBe(
        false,
      );
    }
    expect(await databases()).toEqual([]);
    await page.getByText('This server has no databases yet.').waitFor();
    expect(await create.isDisabled()).toBe(false);
    expect(errors).toEqual([]);
  });
});

describe('the web console: what a subuser may only read', () => {
  it('shows allocations and databases without the controls or the password', async () => {
    const created = await api<{ attributes: DatabaseAttributes }>(`/servers/${databaseServer.identifier}/databases`, 'POST', {
      database: `seen_${run}`,
      remote: '%',
    });
    const { page, errors } = await newPage(browser);
    await signIn(page, svc.base, 'omar', 'omar-password-1', `/server/${databaseServer.identifier}/databases`);
    const name = created.attributes.name;
    await page.getByRole('button', { name: `Details of database ${name}` }).click();
    const details = page.getByRole('dialog', { name: 'Database connection details' });
    await details.getByText("You may not see this database's password.").waitFor();
    expect(await details.getByRole('textbox', { name: 'Password', exact: true }).count()).toBe(0);
    expect(await details.getByRole('textbox', { name: 'JDBC connection string' }).inputValue()).toBe(
      `jdbc:mysql://${created.attributes.username}@127.0.0.1:3306/${name}`,
    );
    expect(await details.getByRole('button', { name: 'Rotate password' }).isDisabled()).toBe(true);
    await details.getByRole('button', { name: 'Close' }).click();
    expect(await page.getByRole('button', { name: `Delete database ${name}` }).isDisabled()).toBe(true);
    expect(await page.getByRole('button', { name: 'New database' }).isDisabled()).toBe(true);
    await page.getByText('You may not create databases on this server.').waitFor();

    await page.goto(`${svc.base}/server/${networkServer.identifier}/network`);
    const row = page.getByRole('listitem').filter({ has: page.getByText('Primary') });
    expect(await row.getByRole('textbox').isDisabled()).toBe(true);
    expect(await page.getByRole('button', { name: 'Create allocation' }).isDisabled()).toBe(true);
    await page.getByText('You may not add allocations to this server.').waitFor();

    await api(`/servers/${databaseServer.identifier}/databases/${created.attributes.id}`, 'DELETE');
    expect(await schemaExists(name)).toBe(false);
    expect(errors).toEqual([]);
  });
});
