import fs from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropFiles, droppedBytes, grid, row, screenshots, selectEntry } from './files-helpers.js';
import { testDatabases, type TestDatabaseHandle } from '../helpers/databases.js';
import { auditPage, eventually, launchBrowser, newPage, signIn, startConsoleService, type ConsoleService } from './helpers.js';

/**
 * The Files section of the console (docs/reference/files-and-sftp.md's last bullet) against a real
 * service and its real files: browse with breadcrumbs, open a file in the
 * highlighting editor, edit and save it, new file and folder, rename and
 * move, delete after confirming, upload by drag and drop with its progress,
 * download, compress and decompress, permissions; the API's refusals shown
 * where they happened; controls a subuser lacks disabled; axe on the list
 * and the editor, with screenshots at 1280 and 375 px.
 */

// One database per run (PostgreSQL when the run has one, else SQLite): the page is the same on both, the
// routes behind it are tested on both (test/files), and each pass must stay within CI's ten minutes.
for (const kind of testDatabases.slice(-1)) {
  describe(`the web console: files [${kind.name}]`, () => {
    let svc: ConsoleService;
    let browser: Browser;
    let server: { uuid: string; identifier: string };
    let volume: string;
    let database: TestDatabaseHandle | null = null;
    const PASSWORD = 'grace-password-1';

    const at = (...parts: string[]) => path.join(volume, ...parts);
    const filesPage = (dir = '/') => `/server/${server.identifier}/files${dir === '/' ? '' : `?dir=${encodeURIComponent(dir)}`}`;

    beforeAll(async () => {
      // PostgreSQL: a fresh schema of its own, which the service and its admin commands reach through DATABASE_URL.
      database = kind.name === 'postgres' ? await kind.open() : null;
      // A small editing bound, so that a "too large" file is quick to make.
      [svc, browser] = await Promise.all([
        startConsoleService({ FILE_EDIT_MAX_MB: '1', ...(database ? { DATABASE_URL: database.url } : {}) }),
        launchBrowser(),
      ]);
      await svc.user('grace', PASSWORD);
      await svc.user('reader', 'reader-password-1');
      // The service and its commands do use the schema made for this run.
      if (database)
        expect(
          await database.db.selectFrom('users').select('username').where('username', '=', 'grace').executeTakeFirst(),
        ).toEqual({
          username: 'grace',
        });
      server = await svc.cli(['server:create', '--owner', 'grace', '--name', 'Harvard Mark I']);
      await svc.cli(['subuser:add', '--server', server.identifier, '--user', 'reader', '--permissions', 'file.read']);
      await svc.user('viewer', 'viewer-password-1');
      await svc.cli([
        'subuser:add',
        '--server',
        server.identifier,
        '--user',
        'viewer',
        '--permissions',
        'file.read,file.read-content',
      ]);
      volume = path.join(svc.service.dataDir, 'volumes', server.uuid);
      fs.mkdirSync(at('config', 'world', 'region'), { recursive: true });
      fs.writeFileSync(at('config', 'server.json'), '{\n  "motd": "hello",\n  "port": 25565,\n  "online": true\n}\n');
      fs.writeFileSync(at('config', 'world', 'region', 'r.0.0.mca'), Buffer.alloc(2048, 7));
      fs.writeFileSync(at('server.properties'), 'motd=A Minecraft Server\nmax-players=20\n');
      fs.writeFileSync(at('eula.txt'), 'eula=true\n');
      fs.writeFileSync(at('huge.log'), Buffer.alloc(1024 * 1024 + 1, 'a'));
    });

    afterAll(async () => {
      await browser?.close();
      await svc?.stop();
      await database?.dispose();
    });

    it('browses into folders and back through the breadcrumbs; folders come first, by name', async () => {
      const { page, errors, context } = await newPage(browser);
      await signIn(page, svc.base, 'grace', PASSWORD, filesPage());
      await grid(page).waitFor();
      const names = await page.locator('[role="rowgroup"] .col-name').allTextContents();
      expect(names).toEqual(['config', 'eula.txt', 'huge.log', 'server.properties']);
      await page.getByRole('link', { name: 'Folder config' }).click();
      await page.getByRole('link', { name: 'Folder world' }).click();
      await page.getByRole('link', { name: 'Folder region' }).click();
      await row(page, 'r.0.0.mca').waitFor();
      const crumbs = page.getByRole('navigation', { name: 'Breadcrumb' });
      expect(await crumbs.getByRole('listitem').allTextContents()).toEqual(['Files', 'config', 'world', 'region']);
      await crumbs.getByRole('link', { name: 'config' }).click();
      await row(page, 'server.json').waitFor();
      expect(new URL(page.url()).searchParams.get('dir')).toBe('/config');
      await page.goBack();
      await row(page, 'r.0.0.mca').waitFor();
      await crumbs.getByRole('link', { name: 'Files' }).click();
      await row(page, 'eula.txt').waitFor();
      await auditPage(page, 'files-list');
      // The screenshots with a selection, so that the toolbar's actions show enabled.
      await selectEntry(page, 'server.properties');
      await screenshots(page, 'files-list');
      await page.getByRole('checkbox', { name: 'Select server.properties' }).uncheck();
      // Sorting by name the other way keeps the folders first.
      await page.getByRole('button', { name: 'Name', exact: true }).click();
      expect(await page.locator('[role="rowgroup"] .col-name').allTextContents()).toEqual([
        'config',
        'server.properties',
        'huge.log',
        'eula.txt',
      ]);
      expect(errors).toEqual([]);
      await context.close();
    });

    it('opens a file in the highlighting editor, saves an edit to disk, and asks before leaving unsaved changes', async () => {
      const { page, errors, context } = await newPage(browser);
      const refused: string[] = [];
      page.on('console', (message) => {
        if (message.type() === 'error') refused.push(message.text());
      });
      await signIn(page, svc.base, 'grace', PASSWORD, filesPage('/config'));
      await page.getByRole('link', { name: 'server.json' }).click();
      const editor = page.locator('.cm-content');
      await editor.getByText('"motd"').waitFor();
      // Highlighted: the JSON grammar's tokens carry CodeMirror's generated classes, a string and a number in different colours.
      const string = page.locator('.cm-line span', { hasText: '"hello"' }).first();
      const number = page.locator('.cm-line span', { hasText: '25565' }).first();
      expect(await string.getAttribute('class')).toMatch(/\S/);
      // This project's TypeScript has no DOM types: the page's globals are reached through globalThis.
      const colourOf = (element: unknown) =>
        (globalThis as unknown as { getComputedStyle(e: unknown): { color: string } }).getComputedStyle(element).color;
      const colours = await Promise.all([string, number].map((token) => token.evaluate(colourOf)));
      expect(colours[0]).not.toBe(colours[1]);

      await page.getByLabel('Contents of server.json').click();
      await page.keyboard.press('ControlOrMeta+End');
      await page.keyboard.type('{"added": 1}');
      await page.getByText('Unsaved changes').waitFor();
      // Leaving asks first; staying keeps the edit.
      await page.getByRole('link', { name: 'Back to folder' }).click();
      const leave = page.getByRole('dialog', { name: 'Leave without saving?' });
      await leave.waitFor();
      await leave.getByRole('button', { name: 'Cancel' }).click();
      await auditPage(page, 'files-editor');
      await screenshots(page, 'files-editor');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByText('Saved.', { exact: true }).waitFor();
      expect(fs.readFileSync(at('config', 'server.json'), 'utf8')).toBe(
        '{\n  "motd": "hello",\n  "port": 25565,\n  "online": true\n}\n{"added": 1}',
      );
      // Saved: leaving no longer asks.
      await page.getByRole('link', { name: 'Back to folder' }).click();
      await row(page, 'server.json').waitFor();
      expect(errors).toEqual([]);
      expect(refused.filter((text) => /Content Security Policy|Refused/.test(text))).toEqual([]);
      await context.close();
    });

    it('shows the refusal of a file over FILE_EDIT_MAX_MB and offers its download', async () => {
      const { page, context } = await newPage(browser);
      await signIn(page, svc.base, 'grace', PASSWORD, `/server/${server.identifier}/files/edit?file=%2Fhuge.log`);
      await page.getByRole('alert').waitFor();
      expect(await page.getByRole('alert').textContent()).toMatch(/\S/);
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.getByRole('button', { name: 'Download it instead' }).click(),
      ]);
      expect(download.suggestedFilename()).toBe('huge.log');
      expect(fs.statSync((await download.path())!).size).toBe(1024 * 1024 + 1);
      await context.close();
    });

    it('creates a folder and a file, renames, moves one and then two, and deletes after confirming', async () => {
      fs.writeFileSync(at('one.jar'), '1');
      fs.writeFileSync(at('two.jar'), '2');
      const { page, errors, context } = await newPage(browser);
      await signIn(page, svc.base, 'grace', PASSWORD, filesPage());
      await grid(page).waitFor();

      await page.getByRole('button', { name: 'New folder' }).click();
      const folderDialog = page.getByRole('dialog', { name: 'New folder' });
      await folderDialog.getByLabel('Folder name').fill('plugins');
      await folderDialog.getByRole('button', { name: 'Create folder' }).click();
      await row(page, 'plugins').waitFor();
      expect(fs.statSync(at('plugins')).isDirectory()).toBe(true);

      await page.getByRole('link', { name: 'New file' }).click();
      await page.getByLabel('File name').fill('notes.yml');
      await page.getByLabel('Contents of the new file').click();
      await page.keyboard.type('greeting: hello');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByText('Saved.', { exact: true }).waitFor();
      expect(fs.readFileSync(at('notes.yml'), 'utf8')).toBe('greeting: hello');
      await page.getByRole('link', { name: 'Back to folder' }).click();

      // Rename in place.
      await selectEntry(page, 'notes.yml');
      await page.getByRole('button', { name: 'Rename or move' }).click();
      const renameDialog = page.getByRole('dialog', { name: 'Rename or move “notes.yml”' });
      await renameDialog.getByLabel('New name or path').fill('readme.yml');
      await renameDialog.getByRole('button', { name: 'Rename' }).click();
      await row(page, 'readme.yml').waitFor();
      expect(fs.existsSync(at('notes.yml'))).toBe(false);
      expect(fs.readFileSync(at('readme.yml'), 'utf8')).toBe('greeting: hello');

      // Move by a path into the new folder.
      await selectEntry(page, 'readme.yml');
      await page.getByRole('button', { name: 'Rename or move' }).click();
      const moveDialog = page.getByRole('dialog', { name: 'Rename or move “readme.yml”' });
      await moveDialog.getByLabel('New name or path').fill('/plugins/readme.yml');
      await moveDialog.getByRole('button', { name: 'Rename' }).click();
      await row(page, 'readme.yml').waitFor({ state: 'detached' });
      expect(fs.readFileSync(at('plugins', 'readme.yml'), 'utf8')).toBe('greeting: hello');

      // Two at once, into a folder.
      await selectEntry(page, 'one.jar');
      await selectEntry(page, 'two.jar');
      await page.getByRole('button', { name: 'Rename or move' }).click();
      const moveTwo = page.getByRole('dialog', { name: 'Move 2 entries' });
      await moveTwo.getByLabel('Destination folder').fill('plugins');
      await moveTwo.getByRole('button', { name: 'Move' }).click();
      await page.getByText('Moved 2 entries to /plugins.').waitFor();
      expect(fs.readdirSync(at('plugins')).sort()).toEqual(['one.jar', 'readme.yml', 'two.jar']);
      expect(fs.existsSync(at('one.jar')) || fs.existsSync(at('two.jar'))).toBe(false);

      // Delete, confirmed.
      await selectEntry(page, 'plugins');
      await page.getByRole('button', { name: 'Delete', exact: true }).click();
      const confirm = page.getByRole('dialog', { name: 'Delete “plugins”?' });
      await confirm.getByText('Folders are deleted with everything in them.', { exact: false }).waitFor();
      await auditPage(page, 'files-delete-dialog');
      await confirm.getByRole('button', { name: 'Delete' }).click();
      await row(page, 'plugins').waitFor({ state: 'detached' });
      expect(fs.existsSync(at('plugins'))).toBe(false);
      expect(errors).toEqual([]);
      await context.close();
    });

    it('refuses a new file named as one in its folder, asks before a section link leaves it unsaved, and leaves when told to, writing nothing', async () => {
      const { page, errors, context } = await newPage(browser);
      await signIn(page, svc.base, 'grace', PASSWORD, `/server/${server.identifier}/files/new?dir=%2Fconfig`);
      // A name already in the folder is refused here, before anything is sent: the file keeps its contents.
      const before = fs.readFileSync(at('config', 'server.json'), 'utf8');
      await page.getByLabel('File name').fill('server.json');
      await page.getByLabel('Contents of the new file').click();
      await page.keyboard.type('not saved');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByText('“server.json” already exists in this folder: open it to edit it.').waitFor();
      expect(await page.getByLabel('File name').getAttribute('aria-invalid')).toBe('true');
      expect(fs.readFileSync(at('config', 'server.json'), 'utf8')).toBe(before);
      await page.getByLabel('File name').fill('draft.txt');
      await page.getByRole('navigation', { name: 'Server sections' }).getByRole('link', { name: 'Schedules' }).click();
      const leave = page.getByRole('dialog', { name: 'Leave without saving?' });
      await leave.getByRole('button', { name: 'Leave' }).click();
      await page.getByRole('heading', { name: 'Schedules' }).waitFor();
      expect(new URL(page.url()).pathname).toBe(`/server/${server.identifier}/schedules`);
      expect(fs.existsSync(at('config', 'draft.txt'))).toBe(false);
      expect(errors).toEqual([]);
      await context.close();
    });

    it("keeps the API's refusal where it happened: a rename onto a name that is taken", async () => {
      const { page, context } = await newPage(browser);
      await signIn(page, svc.base, 'grace', PASSWORD, filesPage());
      await grid(page).waitFor();
      await selectEntry(page, 'eula.txt');
      await page.getByRole('button', { name: 'Rename or move' }).click();
      const dialog = page.getByRole('dialog', { name: 'Rename or move “eula.txt”' });
      await dialog.getByLabel('New name or path').fill('server.properties');
      await dialog.getByRole('button', { name: 'Rename' }).click();
      const alert = dialog.getByRole('alert');
      await alert.waitFor();
      expect(await alert.textContent()).toMatch(/\S/);
      // Nothing changed.
      expect(fs.readFileSync(at('eula.txt'), 'utf8')).toBe('eula=true\n');
      expect(fs.readFileSync(at('server.properties'), 'utf8')).toBe('motd=A Minecraft Server\nmax-players=20\n');
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await context.close();
    });

    it('uploads dropped files with a progress bar that reaches done', async () => {
      const { page, errors, context } = await newPage(browser);
      await signIn(page, svc.base, 'grace', PASSWORD, filesPage('/config'));
      await grid(page).waitFor();
      await page.evaluate(`window.sawProgress = false;
      new MutationObserver(() => {
        if (document.querySelector('progress[aria-label="Upload progress"]')) window.sawProgress = true;
      }).observe(document.body, { subtree: true, childList: true });`);
      const size = 3 * 1024 * 1024;
      await dropFiles(page, { 'world.zip': size, 'small.txt': 12 });
      await page.getByText('Uploaded 2 files.').waitFor({ timeout: 20_000 });
      expect(await page.getByLabel('Upload progress').getAttribute('value')).toBe('100');
      expect(await page.evaluate<boolean>('window.sawProgress')).toBe(true);
      expect(fs.readFileSync(at('config', 'world.zip')).equals(droppedBytes('world.zip', size))).toBe(true);
      expect(fs.readFileSync(at('config', 'small.txt')).equals(droppedBytes('small.txt', 12))).toBe(true);
      await row(page, 'world.zip').waitFor();
      expect(errors).toEqual([]);
      await context.close();
    });

    it('downloads a file through its signed URL, and copies it', async () => {
      const { page, context } = await newPage(browser);
      await signIn(page, svc.base, 'grace', PASSWORD, filesPage());
      await grid(page).waitFor();
      await selectEntry(page, 'server.properties');
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.getByRole('button', { name: 'Download' }).click(),
      ]);
      expect(download.suggestedFilename()).toBe('server.properties');
      expect(fs.readFileSync((await download.path())!, 'utf8')).toBe('motd=A Minecraft Server\nmax-players=20\n');
      // Copy: a copy beside it, with Pterodactyl's naming (the API picks the name).
      await page.getByRole('button', { name: 'Copy', exact: true }).click();
      await page.getByText('Copied “server.properties”.').waitFor();
      const copies = fs
        .readdirSync(volume)
        .filter((name) => name !== 'server.properties' && name.startsWith('server') && name.includes('copy'));
      expect(copies.length).toBe(1);
      expect(fs.readFileSync(at(copies[0]!), 'utf8')).toBe('motd=A Minecraft Server\nmax-players=20\n');
      await row(page, copies[0]!).waitFor();
      fs.rmSync(at(copies[0]!));
      await context.close();
    });

    it('compresses the selected entries and decompresses the archive', async () => {
      const { page, errors, context } = await newPage(browser);
      await signIn(page, svc.base, 'grace', PASSWORD, filesPage());
      await grid(page).waitFor();
      await selectEntry(page, 'config');
      await selectEntry(page, 'eula.txt');
      await page.getByRole('button', { name: 'Compress', exact: true }).click();
      const created = page.getByText(/^Created “.+\.tar\.gz”\.$/);
      await created.waitFor({ timeout: 20_000 });
      const archive = /“(.+)”/.exec((await created.textContent()) ?? '')![1]!;
      expect(fs.statSync(at(archive)).size).toBeGreaterThan(0);
      // The archive is left selected; its contents come back after the originals are gone.
      fs.rmSync(at('config'), { recursive: true });
      fs.rmSync(at('eula.txt'));
      await page.getByRole('button', { name: 'Decompress' }).click();
      await page.getByText(`Unpacked “${archive}”.`).waitFor({ timeout: 20_000 });
      expect(fs.readFileSync(at('eula.txt'), 'utf8')).toBe('eula=true\n');
      expect(fs.statSync(at('config', 'world', 'region', 'r.0.0.mca')).size).toBe(2048);
      await row(page, 'config').waitFor();
      expect(errors).toEqual([]);
      await context.close();
    });

    it('sets permissions with the octal field and the boxes', async () => {
      const { page, errors, context } = await newPage(browser);
      await signIn(page, svc.base, 'grace', PASSWORD, filesPage());
      await grid(page).waitFor();
      fs.chmodSync(at('server.properties'), 0o644);
      await selectEntry(page, 'server.properties');
      await page.getByRole('button', { name: 'Permissions' }).click();
      const dialog = page.getByRole('dialog', { name: 'Permissions of “server.properties”' });
      const octal = dialog.getByLabel('Mode (octal)');
      expect(await octal.inputValue()).toBe('644');
      expect(await dialog.getByRole('checkbox', { name: 'Group read' }).isChecked()).toBe(true);
      await octal.fill('600');
      expect(await dialog.getByRole('checkbox', { name: 'Group read' }).isChecked()).toBe(false);
      await dialog.getByRole('checkbox', { name: 'Owner execute' }).check();
      expect(await octal.inputValue()).toBe('700');
      await dialog.getByRole('checkbox', { name: 'Owner execute' }).uncheck();
      await octal.fill('9');
      expect(await dialog.getByRole('button', { name: 'Set permissions' }).isDisabled()).toBe(true);
      await octal.fill('640');
      await auditPage(page, 'files-permissions-dialog');
      await dialog.getByRole('button', { name: 'Set permissions' }).click();
      await page.getByText('Permissions set to 640.').waitFor();
      expect(fs.statSync(at('server.properties')).mode & 0o777).toBe(0o640);
      await eventually(async () => (await row(page, 'server.properties').textContent())?.includes('-rw-r-----'));
      expect(errors).toEqual([]);
      await context.close();
    });

    it('offers a subuser with file.read only the browsing: every change is disabled', async () => {
      const { page, context } = await newPage(browser);
      await signIn(page, svc.base, 'reader', 'reader-password-1', filesPage());
      await grid(page).waitFor();
      await selectEntry(page, 'server.properties');
      for (const name of [
        'New folder',
        'New file',
        'Upload',
        'Rename or move',
        'Copy',
        'Download',
        'Permissions',
        'Compress',
        'Delete',
      ])
        expect(await page.getByRole('button', { name, exact: true }).isDisabled(), name).toBe(true);
      // Without file.read-content a text file's name opens nothing.
      expect(await page.getByRole('link', { name: 'server.properties' }).count()).toBe(0);
      await context.close();
    });

    it('opens a file read-only for a subuser who may read it but not change it', async () => {
      const { page, errors, context } = await newPage(browser);
      await signIn(page, svc.base, 'viewer', 'viewer-password-1', filesPage());
      await page.getByRole('link', { name: 'server.properties' }).click();
      const editor = page.getByLabel('Contents of server.properties');
      await editor.getByText('max-players=20').waitFor();
      await page.getByText('You can read this file but not save it').waitFor();
      expect(await editor.getAttribute('aria-readonly')).toBe('true');
      await editor.click();
      await page.keyboard.type('typed');
      expect(await editor.textContent()).not.toContain('typed');
      expect(await page.getByText('Unsaved changes').count()).toBe(0);
      expect(await page.getByRole('button', { name: 'Save' }).isDisabled()).toBe(true);
      expect(errors).toEqual([]);
      await context.close();
    });

    it("shows an upload refused by the server's disk limit in the upload's place", async () => {
      const small = await svc.cli<{ uuid: string; identifier: string }>([
        'server:create',
        '--owner',
        'grace',
        '--name',
        'Tiny disk',
        '--disk',
        '1',
      ]);
      const { page, context } = await newPage(browser);
      await signIn(page, svc.base, 'grace', PASSWORD, `/server/${small.identifier}/files`);
      await grid(page).waitFor();
      await dropFiles(page, { 'too-big.bin': 2 * 1024 * 1024 });
      const status = page.locator('.upload');
      await status.getByText('The upload of “too-big.bin” failed.').waitFor({ timeout: 20_000 });
      expect(await status.getByRole('alert').textContent()).toMatch(/\S/);
      expect(fs.existsSync(path.join(svc.service.dataDir, 'volumes', small.uuid, 'too-big.bin'))).toBe(false);
      await context.close();
    });
  });
}
