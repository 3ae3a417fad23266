import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { auditPage, launchBrowser, newPage, signIn, startConsoleService, type ConsoleService } from './helpers.js';

/** Signing in, the server list, deep links, and the account page's API keys (docs/reference/web-console.md). */

let svc: ConsoleService;
let browser: Browser;

beforeAll(async () => {
  [svc, browser] = await Promise.all([startConsoleService(), launchBrowser()]);
  // One admin command at a time: concurrent ones can meet SQLite's "database is locked".
  await svc.user('ada', 'ada-password-1');
  await svc.user('bob', 'bob-password-1');
  await svc.cli(['server:create', '--owner', 'ada', '--name', 'Lovelace survival']);
  await svc.cli(['server:create', '--owner', 'ada', '--name', 'Creative build']);
  await svc.cli(['server:create', '--owner', 'bob', '--name', 'Not for Ada']);
});

afterAll(async () => {
  await browser?.close();
  await svc?.stop();
});

describe('the web console: sign-in, servers and account', () => {
  it('serves the app at / and deep links, and keeps the API 404 for unknown API paths', async () => {
    const root = await fetch(`${svc.base}/`);
    expect(root.status).toBe(200);
    expect(root.headers.get('cache-control')).toBe('no-cache');
    const html = await root.text();
    expect(html).toContain('<meta name="quetzal-timezone" content="UTC">');
    const script = /src="\/(app\.[A-Z0-9]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const asset = await fetch(`${svc.base}/${script}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toContain('immutable');
    expect((await fetch(`${svc.base}/server/abcd1234/schedules`)).status).toBe(200);
    const unknown = await fetch(`${svc.base}/api/client/nope`);
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { errors: { code: string }[] }).errors[0]?.code).toBe('NotFoundHttpException');
  });

  it("a wrong password shows the API's message; the right one shows the servers the user can see", async () => {
    const { page, errors, context } = await newPage(browser);
    await page.goto(svc.base);
    await page.getByLabel('Username or email').fill('ada');
    await page.getByLabel('Password').fill('not-her-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    const message = await alert.textContent();
    expect(message).toMatch(/credentials/i);
    await auditPage(page, 'sign-in');

    await page.getByLabel('Password').fill('ada-password-1');
    await page.getByRole('button', { name: 'Sign in' }).click();
    const list = page.getByRole('list', { name: 'Servers' });
    await list.waitFor();
    expect(await list.getByRole('link').allTextContents()).toEqual(
      expect.arrayContaining(['Lovelace survival', 'Creative build']),
    );
    expect(await list.getByRole('link').count()).toBe(2);
    // Each server's live state from its resources.
    await expect.poll(() => list.locator('.live-figures .badge').allTextContents()).toEqual(['Offline', 'Offline']);
    await auditPage(page, 'servers');

    await list.getByRole('link', { name: 'Creative build' }).click();
    const sections = page.getByRole('navigation', { name: 'Server sections' });
    await sections.waitFor();
    expect(await sections.getByRole('link').allTextContents()).toEqual([
      'Console',
      'Files',
      'Databases',
      'Schedules',
      'Users',
      'Backups',
      'Network',
      'Startup',
      'Settings',
      'Activity',
    ]);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('a deep link asked for before signing in is where the user lands', async () => {
    const { page, context } = await newPage(browser);
    const { identifier } = await svc.cli<{ identifier: string }>(['server:create', '--owner', 'ada', '--name', 'Deep link']);
    await signIn(page, svc.base, 'ada@example.com', 'ada-password-1', `/server/${identifier}/backups`);
    await page.getByRole('heading', { name: 'Backups' }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/server/${identifier}/backups`);
    await context.close();
  });

  it('creates an API key (the secret shown once works as a bearer key) and revokes it', async () => {
    const { page, errors, context } = await newPage(browser);
    await signIn(page, svc.base, 'ada', 'ada-password-1', '/account');
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    await page.getByLabel('Description').fill('deploy bot');
    await page.getByLabel(/Allowed IPs/).fill('127.0.0.1');
    await page.getByRole('button', { name: 'Create API key' }).click();
    const secret = page.getByLabel('Your new API key', { exact: true });
    await secret.waitFor();
    const token = await secret.inputValue();
    expect(token).toMatch(/^ptlc_[A-Za-z0-9]{43}$/);
    await auditPage(page, 'account');

    const asBearer = await fetch(`${svc.base}/api/client`, {
      headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
    });
    expect(asBearer.status).toBe(200);
    const names = ((await asBearer.json()) as { data: { attributes: { name: string } }[] }).data.map((s) => s.attributes.name);
    expect(names).toContain('Lovelace survival');

    // Shown once: gone after "Done", and not on the page after a reload either.
    await page.getByRole('button', { name: 'Done' }).click();
    await page.reload();
    await page.getByRole('list', { name: 'API keys' }).waitFor();
    expect(await page.getByLabel('Your new API key', { exact: true }).count()).toBe(0);
    expect(await page.content()).not.toContain(token.slice(16));

    const identifier = token.slice(0, 16);
    await page.getByRole('button', { name: `Revoke API key ${identifier}` }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('button', { name: `Revoke API key ${identifier}` }).waitFor({ state: 'detached' });
    const revoked = await fetch(`${svc.base}/api/client`, {
      headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
    });
    expect(revoked.status).toBe(401);
    expect(errors).toEqual([]);
    await context.close();
  });

  it("a wrong current password is refused with the API's message", async () => {
    const { page, context } = await newPage(browser);
    await signIn(page, svc.base, 'bob', 'bob-password-1', '/account');
    await page.getByLabel('Current password').fill('nope-nope-nope');
    await page.getByLabel('New password', { exact: true }).fill('bob-password-2');
    await page.getByLabel('Confirm new password').fill('bob-password-2');
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).not.toBe('');
    await page.getByLabel('Current password').fill('bob-password-1');
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByText('Your password has been changed.').waitFor();
    await context.close();
  });

  it('a fresh page load asks nothing that fails: no 401 for /auth/session, no console error', async () => {
    const { page, errors, context } = await newPage(browser);
    const logged: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') logged.push(message.text());
    });
    const failed: string[] = [];
    page.on('response', (response) => {
      if (response.status() >= 400) failed.push(`${response.status()} ${new URL(response.url()).pathname}`);
    });
    await page.goto(svc.base);
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await page.goto(`${svc.base}/account`);
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    expect(failed).toEqual([]);
    expect(logged).toEqual([]);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('sign out shows the sign-in form at once, before the panel answers, with no signed-in data left', async () => {
    const { page, errors, context } = await newPage(browser);
    await signIn(page, svc.base, 'ada', 'ada-password-1');
    await page.getByRole('link', { name: 'Lovelace survival' }).waitFor();
    // Hold the sign-out request: the form must not wait for its answer.
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let logoutSeen = false;
    await page.route('**/auth/logout', async (route) => {
      logoutSeen = true;
      await held;
      await route.continue();
    });
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    expect(logoutSeen).toBe(true);
    const text = (await page.textContent('body')) ?? '';
    expect(text).not.toContain('Lovelace survival');
    expect(text).not.toContain('Creative build');
    expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
    release();
    // And the session really ended: a reload stays signed out.
    await page.waitForResponse((response) => response.url().endsWith('/auth/logout'));
    await page.reload();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    expect(await page.getByRole('link', { name: 'Lovelace survival' }).count()).toBe(0);
    expect(errors).toEqual([]);
    await context.close();
  });
});
