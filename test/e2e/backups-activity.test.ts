import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { auditPage, eventually, launchBrowser, newPage, signIn, startConsoleService, type ConsoleService } from './helpers.js';

/**
 * Backups and the activity log in the console (docs/reference/activity.md#entries, docs/reference/activity.md#listing, docs/reference/backups-and-restores.md#restoring, docs/reference/servers.md#the-server-routes, docs/reference/web-console.md):
 * create with ignored files and locked, unlock and lock, restore with the
 * truncate box confirmed and its progress until done, delete; then the log
 * those left, filtered by event, IP and actor (system included), sorted and
 * paged, with each entry's properties.
 */

let svc: ConsoleService;
let browser: Browser;
let server: { uuid: string; identifier: string };
let token: string;
let volume: string;

const api = async <T>(method: string, url: string, body?: unknown): Promise<T> => {
  const res = await fetch(`${svc.base}/api/client${url}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      accept: 'application/json',
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  expect(res.status, `${method} ${url}`).toBeLessThan(300);
  return (res.status === 204 ? undefined : await res.json()) as T;
};

beforeAll(async () => {
  [svc, browser] = await Promise.all([startConsoleService(), launchBrowser()]);
  await svc.user('linus', 'linus-password-1');
  server = await svc.cli(['server:create', '--owner', 'linus', '--name', 'Kernel']);
  ({ token } = await svc.cli<{ token: string }>(['key:create', '--user', 'linus']));
  volume = path.join(svc.service.dataDir, 'volumes', server.uuid);
  fs.writeFileSync(path.join(volume, 'world.txt'), 'the original world\n');
  fs.writeFileSync(path.join(volume, 'debug.log'), 'noise\n');
});

afterAll(async () => {
  await browser?.close();
  await svc?.stop();
});

describe('the web console: backups and activity', () => {
  it('creates a locked backup, unlocks and locks it, restores it with truncate confirmed, deletes another', async () => {
    const { page, errors, context } = await newPage(browser);
    await signIn(page, svc.base, 'linus', 'linus-password-1', `/server/${server.identifier}/backups`);
    await page.getByLabel('Name').fill('before update');
    await page.getByLabel('Ignored files (one pattern per line)').fill('*.log\n');
    await page.getByLabel(/^Locked/).check();
    await page.getByRole('button', { name: 'Create backup' }).click();
    const list = page.getByRole('list', { name: 'Backups' });
    const row = list.getByRole('listitem').filter({ hasText: 'before update' });
    await row.getByText('Completed').waitFor({ timeout: 15_000 });
    await row.getByText('Locked', { exact: true }).waitFor();
    expect(await row.getByText('Ignoring *.log').count()).toBe(1);
    // Locked: it cannot be deleted until unlocked.
    expect(await page.getByRole('button', { name: 'Delete backup before update' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Unlock backup before update', exact: true }).click();
    await page.getByRole('button', { name: 'Lock backup before update', exact: true }).waitFor();
    expect(await row.getByText('Locked', { exact: true }).count()).toBe(0);
    await page.getByRole('button', { name: 'Lock backup before update', exact: true }).click();
    await page.getByRole('button', { name: 'Unlock backup before update', exact: true }).waitFor();

    // The files change after the backup; restoring with truncate brings back exactly what it holds.
    fs.writeFileSync(path.join(volume, 'world.txt'), 'a changed world\n');
    fs.writeFileSync(path.join(volume, 'added-later.txt'), 'new\n');
    // Whether the progress bar was ever shown, however short the restore (in-page code as text: no DOM types here).
    await page.evaluate(`window.sawProgress = false;
      new MutationObserver(() => {
        if (document.querySelector('progress[aria-label="Restore progress"]')) window.sawProgress = true;
      }).observe(document.body, { subtree: true, childList: true });`);
    await page.getByRole('button', { name: 'Restore backup before update' }).click();
    const dialog = page.getByRole('dialog', { name: 'Restore “before update”?' });
    await dialog.waitFor();
    await auditPage(page, 'backup-restore-dialog');
    await dialog.getByLabel('Delete all files before restoring').check();
    await dialog.getByRole('button', { name: 'Restore' }).click();
    await page.getByText('The restore of “before update” is complete.').waitFor({ timeout: 20_000 });
    expect(await page.evaluate<boolean>('window.sawProgress')).toBe(true);
    expect(fs.readFileSync(path.join(volume, 'world.txt'), 'utf8')).toBe('the original world\n');
    expect(fs.existsSync(path.join(volume, 'added-later.txt'))).toBe(false);
    expect(fs.existsSync(path.join(volume, 'debug.log'))).toBe(false);
    const after = await api<{ attributes: { status: string | null } }>('GET', `/servers/${server.identifier}`);
    expect(after.attributes.status).toBeNull();
    await auditPage(page, 'backups');

    // A second backup, deleted after its confirmation.
    await page.getByLabel('Name').fill('scratch');
    await page.getByRole('button', { name: 'Create backup' }).click();
    await list.getByRole('listitem').filter({ hasText: 'scratch' }).getByText('Completed').waitFor({ timeout: 15_000 });
    await page.getByRole('button', { name: 'Delete backup scratch' }).click();
    await page.getByRole('dialog', { name: 'Delete “scratch”?' }).getByRole('button', { name: 'Delete' }).click();
    await list.getByRole('listitem').filter({ hasText: 'scratch' }).waitFor({ state: 'detached' });
    expect(errors).toEqual([]);
    await context.close();
  });

  it('lists the activity with filters for event, IP and actor (system too), sort, pages and properties', async () => {
    // Enough entries for a second page: schedules made through the API (each logs server:schedule.create).
    for (let i = 1; i <= 24; i++) await api('POST', `/servers/${server.identifier}/schedules`, { name: `filler ${i}` });
    const all = await api<{ meta: { pagination: { total: number } } }>('GET', `/servers/${server.identifier}/activity`);
    const total = all.meta.pagination.total;
    expect(total).toBeGreaterThan(25);

    const { page, errors, context } = await newPage(browser);
    await signIn(page, svc.base, 'linus', 'linus-password-1', `/server/${server.identifier}/activity`);
    const entries = page.getByRole('list', { name: 'Activity entries' }).getByRole('listitem');
    await entries.first().waitFor();
    expect(await entries.count()).toBe(25);
    expect(await page.getByText(`Page 1 of 2 · ${total} entries`).count()).toBe(1);
    await page.getByRole('button', { name: 'Next page' }).click();
    await page.getByText(`Page 2 of 2 · ${total} entries`).waitFor();
    expect(await entries.count()).toBe(total - 25);
    expect(new URL(page.url()).searchParams.get('page')).toBe('2');
    // The page is in the address: back returns to page 1, forward to page 2.
    await page.goBack();
    await page.getByText(`Page 1 of 2 · ${total} entries`).waitFor();
    await page.goForward();
    await page.getByText(`Page 2 of 2 · ${total} entries`).waitFor();
    await page.getByRole('button', { name: 'Previous page' }).click();
    await page.getByText(`Page 1 of 2`).waitFor();
    await auditPage(page, 'activity');

    // Event filter, with each entry's properties shown.
    await page.getByLabel('Event').fill('backup.restore');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect
      .poll(async () => (await entries.locator('.event-key').allTextContents()).sort())
      .toEqual(['server:backup.restore', 'server:backup.restore-complete']);
    const restore = entries.filter({ has: page.getByText('server:backup.restore', { exact: true }) });
    // A sentence, not only the raw key.
    expect(await restore.locator('strong').textContent()).toBe('Started restoring a backup');
    expect(await restore.locator('dt').allTextContents()).toEqual(['name', 'truncate']);
    expect(await restore.locator('dd').allTextContents()).toEqual(['before update', 'true']);
    // The filter is in the address: a reload keeps it, back drops it.
    expect(new URL(page.url()).searchParams.get('event')).toBe('backup.restore');
    await page.reload();
    await expect.poll(async () => (await entries.locator('.event-key').allTextContents()).length).toBe(2);
    expect(await page.getByLabel('Event').inputValue()).toBe('backup.restore');
    await page.goBack();
    await expect.poll(() => entries.count()).toBe(25);
    expect(await page.getByLabel('Event').inputValue()).toBe('');
    await page.goForward();
    await expect.poll(async () => (await entries.locator('.event-key').allTextContents()).length).toBe(2);

    // Actor: System (the backup's completion and the restore's end are the system's).
    await page.getByLabel('Event').fill('');
    await page.getByLabel('Actor').selectOption('system');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect
      .poll(async () => (await entries.locator('.event-key').allTextContents()).sort())
      .toEqual(['server:backup.complete', 'server:backup.complete', 'server:backup.restore-complete']);
    expect(await entries.getByText('System', { exact: true }).count()).toBe(3);

    // Actor: the user, seen in the log; IP: their address; oldest first.
    await page.getByLabel('Actor').selectOption({ label: 'linus' });
    await page.getByLabel('IP address').fill('127.0.0.1');
    await page.getByLabel('Sort').selectOption('timestamp');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(async () => (await entries.locator('.event-key').allTextContents())[0]).toBe('server:backup.start');
    expect(await entries.getByText('System', { exact: true }).count()).toBe(0);
    await page.getByLabel('IP address').fill('10.9.9.9');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('No activity matches.').waitFor();
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await expect.poll(() => entries.count()).toBe(25);
    expect(errors).toEqual([]);
    await context.close();
  });

  it("keeps the API's error where it happened: a backup over the server's limit", async () => {
    const limited = await svc.cli<{ identifier: string }>([
      'server:create',
      '--owner',
      'linus',
      '--name',
      'No backups',
      '--backup-limit',
      '0',
    ]);
    const { page, context } = await newPage(browser);
    await signIn(page, svc.base, 'linus', 'linus-password-1', `/server/${limited.identifier}/backups`);
    await page.getByRole('button', { name: 'Create backup' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(/backup/i);
    await eventually(async () => (await page.getByText('No backups yet.').count()) === 1);
    await context.close();
  });

  it('shows a refused lock beside its own backup, and a refused delete inside its dialog, gone when asked again', async () => {
    const shelf = await svc.cli<{ identifier: string }>(['server:create', '--owner', 'linus', '--name', 'Shelf']);
    const made = await api<{ attributes: { uuid: string } }>('POST', `/servers/${shelf.identifier}/backups`, { name: 'kept' });
    await api('POST', `/servers/${shelf.identifier}/backups`, { name: 'gone' });
    const { page, errors, context } = await newPage(browser);
    await signIn(page, svc.base, 'linus', 'linus-password-1', `/server/${shelf.identifier}/backups`);
    const rows = page.getByRole('list', { name: 'Backups' }).getByRole('listitem');
    await rows.filter({ hasText: 'gone' }).getByText('Completed').waitFor({ timeout: 15_000 });
    await rows.filter({ hasText: 'kept' }).getByText('Completed').waitFor({ timeout: 15_000 });
    // Deleted elsewhere while this page shows it: its lock is refused, and the refusal stays on its row.
    const gone = (
      await api<{ data: { attributes: { uuid: string; name: string } }[] }>('GET', `/servers/${shelf.identifier}/backups`)
    ).data.find(({ attributes }) => attributes.name === 'gone')!;
    await api('DELETE', `/servers/${shelf.identifier}/backups/${gone.attributes.uuid}`);
    await page.getByRole('button', { name: 'Lock backup gone', exact: true }).click();
    await rows.filter({ hasText: 'gone' }).getByRole('alert').waitFor();
    expect(await rows.filter({ hasText: 'kept' }).getByRole('alert').count()).toBe(0);

    // Locked elsewhere, then deleted from here: the dialog keeps the API's refusal and stays open.
    await api('POST', `/servers/${shelf.identifier}/backups/${made.attributes.uuid}/lock`);
    await page.getByRole('button', { name: 'Delete backup kept' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete “kept”?' });
    await dialog.getByRole('button', { name: 'Delete' }).click();
    await dialog.getByRole('alert').waitFor();
    expect(await dialog.getByRole('button', { name: 'Delete' }).isEnabled()).toBe(true);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    // Closed, the dialog hands the focus back to the button that opened it.
    await expect
      .poll(() => page.evaluate<string | null>('document.activeElement.getAttribute("aria-label")'))
      .toBe('Delete backup kept');
    // Opened again, the question starts without the old answer.
    await page.getByRole('button', { name: 'Delete backup kept' }).click();
    expect(await page.getByRole('dialog', { name: 'Delete “kept”?' }).getByRole('alert').count()).toBe(0);
    expect(errors).toEqual([]);
    await context.close();
  });
});
