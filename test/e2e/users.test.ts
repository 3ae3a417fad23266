import { generateSync } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { auditPage, launchBrowser, newPage, signIn, startConsoleService, type ConsoleService } from './helpers.js';
import { screenshots } from './files-helpers.js';

/**
 * The Users section (docs/SUBUSERS.md) end to end: the owner adds a subuser
 * by email with permissions picked, changes them with a group's "select all"
 * and removes them, the API's refusals shown beside the form; a subuser with
 * only user.read sees the list without Add, Edit or Remove; a subuser may
 * grant only what they hold. Each change is checked through the API with the
 * owner's key.
 */

interface SubuserAttributes {
  uuid: string;
  email: string;
  permissions: string[];
}

let svc: ConsoleService;
let browser: Browser;
let server: { identifier: string };
let emptyServer: { identifier: string };
let ownerToken: string;

async function api<T>(method: string, url: string, body?: unknown, token = ownerToken): Promise<T> {
  const res = await fetch(`${svc.base}/api/client${url}`, {
    method,
    headers: { authorization: `Bearer ${token}`, accept: 'application/json', 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  expect(res.status, `${method} ${url}`).toBeLessThan(300);
  return (await res.json()) as T;
}

/** The server's subusers as the API has them: email → sorted permissions. */
async function subusersByEmail(): Promise<Record<string, string[]>> {
  const list = await api<{ data: { attributes: SubuserAttributes }[] }>('GET', `/servers/${server.identifier}/users`);
  return Object.fromEntries(list.data.map(({ attributes }) => [attributes.email, [...attributes.permissions].sort()]));
}

const subuserRow = (page: Page, email: string) =>
  page.getByRole('list', { name: 'Subusers' }).getByRole('listitem').filter({ hasText: email });

beforeAll(async () => {
  [svc, browser] = await Promise.all([startConsoleService(), launchBrowser()]);
  // One admin command at a time: concurrent ones can meet SQLite's "database is locked".
  await svc.user('olive', 'olive-password-1');
  await svc.user('rita', 'rita-password-1');
  await svc.user('uma', 'uma-password-1');
  await svc.user('sam', 'sam-password-1');
  server = await svc.cli(['server:create', '--owner', 'olive', '--name', 'Shared world']);
  emptyServer = await svc.cli(['server:create', '--owner', 'olive', '--name', 'Nobody else']);
  ({ token: ownerToken } = await svc.cli<{ token: string }>(['key:create', '--user', 'olive']));
  // Sam turns two-factor on, which his row shows.
  const { token: samToken } = await svc.cli<{ token: string }>(['key:create', '--user', 'sam']);
  const setup = await api<{ data: { image_url_data: string } }>('GET', '/account/two-factor', undefined, samToken);
  const secret = new URL(setup.data.image_url_data).searchParams.get('secret') ?? '';
  await api('POST', '/account/two-factor', { code: generateSync({ secret }), password: 'sam-password-1' }, samToken);
  const users = `/servers/${server.identifier}/users`;
  await api('POST', users, { email: 'rita@example.com', permissions: ['user.read'] });
  await api('POST', users, { email: 'uma@example.com', permissions: ['user.read', 'user.create', 'control.console'] });
});

afterAll(async () => {
  await browser?.close();
  await svc?.stop();
});

describe('the web console: users', () => {
  it('the owner adds a subuser with two permissions, widens them with a select-all, and removes them', async () => {
    const { page, errors, context } = await newPage(browser);
    await signIn(page, svc.base, 'olive', 'olive-password-1', `/server/${emptyServer.identifier}/users`);
    await page.getByText('This server has no subusers yet.').waitFor();
    await page.goto(`${svc.base}/server/${server.identifier}/users`);
    await subuserRow(page, 'rita@example.com').getByText('1 permission', { exact: true }).waitFor();
    // websocket.connect is not counted (Pterodactyl's count).
    await subuserRow(page, 'uma@example.com').getByText('3 permissions', { exact: true }).waitFor();
    await subuserRow(page, 'rita@example.com').getByText('2FA off').waitFor();

    await page.getByRole('button', { name: 'Add subuser' }).click();
    const form = page.getByRole('form', { name: 'Add a subuser' });
    const email = form.getByRole('textbox', { name: 'Email address' });
    await email.fill('olive@example.com');
    await form.getByRole('checkbox', { name: 'control.console' }).check();
    await form.getByRole('checkbox', { name: 'file.read', exact: true }).check();
    // websocket.connect is shown granted and cannot be changed.
    const connect = form.getByRole('checkbox', { name: 'websocket.connect' });
    expect(await connect.isChecked()).toBe(true);
    expect(await connect.isDisabled()).toBe(true);
    await form.getByRole('button', { name: 'Add subuser' }).click();
    await form.getByRole('alert').getByText('You cannot add the server owner as a subuser for this server.').waitFor();

    // A 422: the API's validation detail, beside the form.
    await email.fill('not an address');
    await form.getByRole('button', { name: 'Add subuser' }).click();
    await form.getByRole('alert').getByText('The email field must be a valid email address.').waitFor();
    expect(await email.getAttribute('aria-invalid')).toBe('true');

    // Editing clears the last refusal.
    await email.fill('sam@example.com');
    await form.getByRole('alert').waitFor({ state: 'detached' });
    expect(await email.getAttribute('aria-invalid')).toBeNull();
    await auditPage(page, 'users-picker');
    await screenshots(page, 'users-picker');
    await form.getByRole('button', { name: 'Add subuser' }).click();
    await subuserRow(page, 'sam@example.com').getByText('2 permissions', { exact: true }).waitFor();
    await subuserRow(page, 'sam@example.com').getByText('2FA on').waitFor();
    // The form closed: focus is back on the section, not lost.
    await expect.poll(() => page.evaluate('document.activeElement?.id')).toBe('users-title');
    expect((await subusersByEmail())['sam@example.com']).toEqual(['control.console', 'file.read', 'websocket.connect']);

    await subuserRow(page, 'sam@example.com').getByRole('button', { name: 'Edit sam@example.com' }).click();
    const edit = page.getByRole('form', { name: 'Change permissions of sam@example.com' });
    expect(await edit.getByRole('checkbox', { name: 'file.read', exact: true }).isChecked()).toBe(true);
    expect(await edit.getByRole('textbox').count()).toBe(0);
    await edit.getByRole('checkbox', { name: 'Select all backup permissions' }).check();
    await edit.getByRole('button', { name: 'Save permissions' }).click();
    await subuserRow(page, 'sam@example.com').getByText('7 permissions', { exact: true }).waitFor();
    expect((await subusersByEmail())['sam@example.com']).toEqual([
      'backup.create',
      'backup.delete',
      'backup.download',
      'backup.read',
      'backup.restore',
      'control.console',
      'file.read',
      'websocket.connect',
    ]);

    await auditPage(page, 'users');
    await screenshots(page, 'users');

    await subuserRow(page, 'sam@example.com').getByRole('button', { name: 'Remove sam@example.com' }).click();
    const dialog = page.getByRole('dialog', { name: 'Remove sam@example.com?' });
    await dialog.getByRole('button', { name: 'Remove subuser' }).click();
    await subuserRow(page, 'sam@example.com').waitFor({ state: 'detached' });
    expect(Object.keys(await subusersByEmail()).sort()).toEqual(['rita@example.com', 'uma@example.com']);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('a subuser with only user.read sees the list, and permissions read-only, with no Add, Edit or Remove', async () => {
    const { page, errors, context } = await newPage(browser);
    await signIn(page, svc.base, 'rita', 'rita-password-1', `/server/${server.identifier}/users`);
    await subuserRow(page, 'uma@example.com').getByText('3 permissions', { exact: true }).waitFor();
    await subuserRow(page, 'rita@example.com').getByText('(you)').waitFor();
    await auditPage(page, 'users-read-only');
    expect(await page.getByRole('button', { name: /^(Add|Edit|Remove)/ }).count()).toBe(0);
    expect(await page.getByRole('button', { name: /^View permissions/ }).count()).toBe(1);
    // Her own entry offers nothing; another's only a look at its permissions.
    expect(await subuserRow(page, 'rita@example.com').getByRole('button').count()).toBe(0);
    await subuserRow(page, 'uma@example.com').getByRole('button', { name: 'View permissions of uma@example.com' }).click();
    const view = page.getByRole('form', { name: 'Permissions of uma@example.com' });
    const consoleBox = view.getByRole('checkbox', { name: 'control.console' });
    expect(await consoleBox.isChecked()).toBe(true);
    expect(await consoleBox.isDisabled()).toBe(true);
    expect(await view.getByRole('checkbox', { name: /^Select all/ }).count()).toBe(0);
    expect(await view.getByRole('button', { name: /Save/ }).count()).toBe(0);
    await view.getByRole('button', { name: 'Close' }).click();
    await subuserRow(page, 'uma@example.com').waitFor();
    expect(errors).toEqual([]);
    await context.close();
  });

  it('a subuser may grant only what they hold: the rest is disabled with a note', async () => {
    const { page, errors, context } = await newPage(browser);
    await signIn(page, svc.base, 'uma', 'uma-password-1', `/server/${server.identifier}/users`);
    await page.getByRole('button', { name: 'Add subuser' }).click();
    const form = page.getByRole('form', { name: 'Add a subuser' });
    await form.getByText('Only permissions your own account holds can be given to a subuser').waitFor();
    const start = form.getByRole('checkbox', { name: 'control.start' });
    expect(await start.isDisabled()).toBe(true);
    expect(await start.getAttribute('aria-describedby')).toBeTruthy();
    await form.locator('#permission-control\\.start-about').getByText('You do not hold this permission').waitFor();
    // A group she holds none of says so once.
    const files = form.getByRole('group', { name: 'File' });
    await files.getByText('You hold none of these permissions, so you cannot grant them.').waitFor();
    expect(await files.getByRole('checkbox', { name: 'file.read', exact: true }).isDisabled()).toBe(true);
    expect(await files.getByRole('checkbox', { name: /^Select all/ }).count()).toBe(0);
    // The group's select-all takes only what she may give.
    await form.getByRole('checkbox', { name: 'Select all control permissions' }).check();
    expect(await form.getByRole('checkbox', { name: 'control.console' }).isChecked()).toBe(true);
    expect(await start.isChecked()).toBe(false);
    await auditPage(page, 'users-picker-limited');
    await form.getByRole('textbox', { name: 'Email address' }).fill('sam@example.com');
    await form.getByRole('button', { name: 'Add subuser' }).click();
    await subuserRow(page, 'sam@example.com').getByText('1 permission', { exact: true }).waitFor();
    expect((await subusersByEmail())['sam@example.com']).toEqual(['control.console', 'websocket.connect']);
    expect(errors).toEqual([]);
    await context.close();
  });
});
