import fs from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grid, renderedRows, row } from './files-helpers.js';
import { launchBrowser, newPage, signIn, startConsoleService, type ConsoleService } from './helpers.js';

/**
 * A folder of 100,000 entries in the Files section (docs/reference/files-and-sftp.md: "large folders
 * stay usable"; Pterodactyl's front end stops at 250): every entry is
 * listed, few rows are ever in the DOM, scrolling to the end shows the last
 * name, and the keyboard reaches it too.
 */

const ENTRIES = 100_000;
const name = (i: number) => `entry-${String(i).padStart(6, '0')}.txt`;

let svc: ConsoleService;
let browser: Browser;
let server: { uuid: string; identifier: string };

beforeAll(async () => {
  [svc, browser] = await Promise.all([startConsoleService(), launchBrowser()]);
  await svc.user('ada', 'ada-password-1');
  server = await svc.cli(['server:create', '--owner', 'ada', '--name', 'Analytical engine']);
  const big = path.join(svc.service.dataDir, 'volumes', server.uuid, 'big');
  fs.mkdirSync(path.join(big, 'a-folder'), { recursive: true });
  for (let i = 0; i < ENTRIES - 1; i++) fs.writeFileSync(path.join(big, name(i)), '');
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await svc?.stop();
});

describe('the web console: a folder of 100,000 entries', () => {
  it('lists it all with under 200 rows in the DOM, and scrolling or End reaches the last name', async () => {
    const { page, errors, context } = await newPage(browser);
    await signIn(page, svc.base, 'ada', 'ada-password-1', `/server/${server.identifier}`);
    const started = Date.now();
    await page.goto(`${svc.base}/server/${server.identifier}/files?dir=%2Fbig`);
    await page.getByText(`${ENTRIES.toLocaleString('en')} entries`).waitFor({ timeout: 60_000 });
    const shownMs = Date.now() - started;
    // Of which the API's answer (the listing's request, from its start to its last byte):
    const listingMs = await page.evaluate(() =>
      (
        globalThis as unknown as { performance: { getEntriesByType(type: string): { name: string; duration: number }[] } }
      ).performance
        .getEntriesByType('resource')
        .filter((entry) => entry.name.includes('/files/list'))
        .reduce((sum, entry) => sum + entry.duration, 0),
    );
    console.log(
      `100,000 entries: shown ${shownMs} ms after the navigation began, of which ${Math.round(listingMs)} ms the API's listing`,
    );
    expect(await grid(page).getAttribute('aria-rowcount')).toBe(String(ENTRIES + 1));
    // The folder first, then the files by name.
    await row(page, 'a-folder').waitFor();
    expect(await renderedRows(page).count()).toBeLessThan(200);

    // Scrolled to the end: the last name is shown, still with few rows.
    await grid(page).evaluate((element) => {
      element.scrollTop = element.scrollHeight;
    });
    await row(page, name(ENTRIES - 2)).waitFor();
    expect(await renderedRows(page).count()).toBeLessThan(200);
    expect(await row(page, name(ENTRIES - 2)).isVisible()).toBe(true);

    // The keyboard: Home, then End, moves the active row (and the view) there.
    await grid(page).focus();
    await page.keyboard.press('Home');
    await row(page, 'a-folder').waitFor();
    await page.keyboard.press('ArrowDown');
    expect(await page.locator('#' + (await grid(page).getAttribute('aria-activedescendant'))).textContent()).toContain(name(0));
    await page.keyboard.press('End');
    const active = page.locator('#' + (await grid(page).getAttribute('aria-activedescendant')));
    expect(await active.textContent()).toContain(name(ENTRIES - 2));
    expect(await active.isVisible()).toBe(true);
    // Space selects the active row.
    await page.keyboard.press(' ');
    expect(await active.getAttribute('aria-selected')).toBe('true');
    await page.getByText('1 selected').waitFor();

    // Scrolling stays cheap: a long scroll re-renders only the rows in view.
    // This project's TypeScript has no DOM types: the page's globals are reached through globalThis.
    const frames = await grid(page).evaluate(async (element: { scrollTop: number; scrollHeight: number }) => {
      const page = globalThis as unknown as { performance: { now(): number }; requestAnimationFrame(callback: () => void): void };
      const times: number[] = [];
      for (let i = 0; i < 30; i++) {
        const t0 = page.performance.now();
        element.scrollTop = (element.scrollHeight * i) / 30;
        await new Promise<void>((resolve) => page.requestAnimationFrame(() => page.requestAnimationFrame(resolve)));
        times.push(page.performance.now() - t0);
      }
      return times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
    });
    console.log(`100,000 entries: median ${frames.toFixed(1)} ms per scroll step (two frames)`);
    expect(frames).toBeLessThan(200);

    // Enter opens the active row: Home is the folder, which opens with its breadcrumb.
    await grid(page).focus();
    await page.keyboard.press('Home');
    await page.keyboard.press('Enter');
    await page.getByRole('navigation', { name: 'Breadcrumb' }).getByText('a-folder', { exact: true }).waitFor();
    await page.getByText('This folder is empty.').waitFor();
    expect(errors).toEqual([]);
    await context.close();
  }, 120_000);
});
