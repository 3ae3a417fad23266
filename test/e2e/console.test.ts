import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { auditPage, launchBrowser, newPage, signIn, startConsoleService, type ConsoleService } from './helpers.js';

/**
 * The live console (docs/reference/power-and-console.md#websocket, docs/reference/web-console.md): a real process's output over the
 * websocket, a command and its echo, power buttons, memory and CPU graphs from
 * `stats` frames, and power buttons disabled for a subuser without the
 * permission. Commands faster than the socket's limit (10, then 1 a second:
 * src/modules/websocket/websocket.frames.ts) are kept in the input with a
 * polite message, whether the console held them back or the socket answered
 * `throttled`; a power action over the API's rate limit says so too.
 */

let svc: ConsoleService;
let browser: Browser;
let server: { uuid: string; identifier: string };

const POWER = ['Start', 'Restart', 'Stop', 'Kill'];
const powerButton = (page: Page, name: string) =>
  page.getByRole('group', { name: 'Power' }).getByRole('button', { name, exact: true });
const output = (page: Page) => page.getByRole('log', { name: 'Console output' });
const commandInput = (page: Page) => page.getByLabel('Command');
const THROTTLED = /Too many commands/;

/** Types `line` and presses Enter; answers whether the console kept it in the input (not sent). */
async function enterCommand(page: Page, line: string): Promise<boolean> {
  await commandInput(page).fill(line);
  await commandInput(page).press('Enter');
  return (await commandInput(page).inputValue()) === line;
}

/** Starts the echo server from the console and waits until it runs (its socket is connected by then). */
async function startServer(page: Page): Promise<void> {
  await page
    .getByText(/No output yet\.|ready/)
    .first()
    .waitFor();
  if (await powerButton(page, 'Start').isEnabled()) await powerButton(page, 'Start').click();
  await page.locator('.badge.state-running').waitFor({ timeout: 15_000 });
}

beforeAll(async () => {
  // The tests leave the echo server running: it must stop with the service, not outlive the test's DATA_DIR.
  [svc, browser] = await Promise.all([startConsoleService({ SERVERS_ON_SHUTDOWN: 'stop' }), launchBrowser()]);
  // One admin command at a time: concurrent ones can meet SQLite's "database is locked".
  await svc.user('margaret', 'margaret-password-1');
  await svc.user('helper', 'helper-password-1');
  await svc.user('watcher', 'watcher-password-1');
  await svc.user('hasty', 'hasty-password-1');
  server = await svc.echoServer('margaret', 'Apollo guidance', ['--memory', '256']);
  await svc.cli([
    'subuser:add',
    '--server',
    server.identifier,
    '--user',
    'helper',
    '--permissions',
    'websocket.connect,control.console',
  ]);
  await svc.cli(['subuser:add', '--server', server.identifier, '--user', 'watcher', '--permissions', 'activity.read']);
});

afterAll(async () => {
  await browser?.close();
  await svc?.stop();
});

describe('the web console: live console', () => {
  it("shows a real process's output, sends a command and shows its echo, graphs memory and CPU", async () => {
    const { page, errors, context } = await newPage(browser);
    await signIn(page, svc.base, 'margaret', 'margaret-password-1', `/server/${server.identifier}`);
    await page.getByText('No output yet.').waitFor();
    for (const name of POWER) expect(await powerButton(page, name).count()).toBe(1);
    await powerButton(page, 'Start').click();
    // "ready" is the echo fixture's first line, read from its console over the websocket.
    await output(page).getByText('ready', { exact: true }).waitFor({ timeout: 15_000 });
    await page.locator('.badge.state-running').waitFor();
    expect(await powerButton(page, 'Start').isDisabled()).toBe(true);

    await page.getByLabel('Command').fill('say hello from the console');
    await page.getByRole('button', { name: 'Send' }).click();
    await output(page).getByText('> say hello from the console', { exact: true }).waitFor();
    expect(await page.getByLabel('Command').inputValue()).toBe('');

    // A command over the socket's 4 KiB is refused with a message, not sent (the socket would close).
    expect(await page.getByLabel('Command').getAttribute('maxlength')).toBe('4000');
    await page.getByLabel('Command').fill('€'.repeat(1500));
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByText(/This command is too long to send/).waitFor();
    await page.getByLabel('Command').fill('still connected');
    await page.getByRole('button', { name: 'Send' }).click();
    await output(page).getByText('> still connected', { exact: true }).waitFor();

    // Stats frames (about every 2 s while running) fill the figures and the two graphs.
    await page.locator('.sparkline-line').nth(1).waitFor({ timeout: 15_000 });
    expect(await page.getByRole('img', { name: 'Memory use over the last two minutes' }).count()).toBe(1);
    expect(await page.getByRole('img', { name: 'CPU use over the last two minutes' }).count()).toBe(1);
    expect(await page.locator('.stat strong').first().textContent()).toMatch(/\d+(\.\d)? (B|KiB|MiB) \/ 256 MiB/);
    await auditPage(page, 'console');

    // Reloading brings the recent lines back (`send logs`).
    await page.reload();
    await output(page).getByText('> say hello from the console', { exact: true }).waitFor();

    await powerButton(page, 'Stop').click();
    await page.locator('.badge.state-offline').waitFor({ timeout: 15_000 });
    expect(await powerButton(page, 'Start').isEnabled()).toBe(true);
    // Stopped: the memory and CPU figures clear instead of showing the last live ones.
    await expect.poll(async () => page.locator('.stat strong').first().textContent()).toMatch(/^—/);
    expect(await page.locator('.sparkline-line').count()).toBe(0);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('disables the power buttons for a subuser without the permission, and the command line without control.console', async () => {
    const { page, context } = await newPage(browser);
    await signIn(page, svc.base, 'helper', 'helper-password-1', `/server/${server.identifier}`);
    // Connected: the console shows the server's recent lines (or says there are none).
    await expect.poll(() => output(page).locator('.terminal-line').first().textContent()).not.toBe('Connecting to the console…');
    for (const name of POWER) expect(await powerButton(page, name).isDisabled(), name).toBe(true);
    expect(await page.getByLabel('Command').isEnabled()).toBe(true);
    await auditPage(page, 'console-subuser');
    await context.close();

    const watcher = await newPage(browser);
    await signIn(watcher.page, svc.base, 'watcher', 'watcher-password-1', `/server/${server.identifier}`);
    await watcher.page.getByText(/The live console is unavailable/).waitFor();
    for (const name of POWER) expect(await powerButton(watcher.page, name).isDisabled(), name).toBe(true);
    expect(await watcher.page.getByLabel('Command').isDisabled()).toBe(true);
    await watcher.context.close();
  });

  it('a suspended server says so, with its power buttons and command line disabled and no endless "Connecting"', async () => {
    const held = await svc.echoServer('margaret', 'Suspended one');
    await svc.cli(['server:status', '--server', held.identifier, '--set', 'suspended']);
    const { page, errors, context } = await newPage(browser);
    await signIn(page, svc.base, 'margaret', 'margaret-password-1', `/server/${held.identifier}`);
    await page.getByText('This server is suspended.').waitFor();
    await page.getByText('Suspended: the console is closed while the server is suspended.').waitFor();
    expect(await page.getByText('Connecting to the console…').count()).toBe(0);
    for (const name of POWER) expect(await powerButton(page, name).isDisabled(), name).toBe(true);
    expect(await page.getByLabel('Command').isDisabled()).toBe(true);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('keeps a command sent faster than the socket takes them in the input, says so politely, and sends it after a moment', async () => {
    const { page, errors, context } = await newPage(browser);
    await signIn(page, svc.base, 'margaret', 'margaret-password-1', `/server/${server.identifier}`);
    await startServer(page);
    // The socket takes 10 commands at once, then one a second: the console holds back the rest.
    let kept = '';
    for (let i = 1; i <= 30 && !kept; i++) if (await enterCommand(page, `burst ${i}`)) kept = `burst ${i}`;
    expect(kept, 'a command held back').not.toBe('');
    const notice = page.locator('#console-command-notice');
    expect(await notice.getAttribute('aria-live')).toBe('polite');
    await notice.getByText(THROTTLED).waitFor();
    expect(await commandInput(page).inputValue()).toBe(kept);
    await output(page).getByText('> burst 1', { exact: true }).waitFor();
    expect(await output(page).getByText(`> ${kept}`, { exact: true }).count()).toBe(0);
    await auditPage(page, 'console-throttled');

    // A moment later the same command goes, and the message goes with it.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await page.getByRole('button', { name: 'Send' }).click();
    await output(page).getByText(`> ${kept}`, { exact: true }).waitFor();
    expect(await commandInput(page).inputValue()).toBe('');
    expect(await notice.textContent()).toBe('');
    expect(errors).toEqual([]);
    await context.close();
  });

  it('shows the recent lines each time the console is opened, even several times within the socket’s limit', async () => {
    const { page, errors, context } = await newPage(browser);
    await signIn(page, svc.base, 'margaret', 'margaret-password-1', `/server/${server.identifier}`);
    await startServer(page);
    await enterCommand(page, 'opened again');
    await output(page).getByText('> opened again', { exact: true }).waitFor();
    // The socket takes two `send logs` in 5 seconds; the third opening waits for it instead of staying empty.
    const sections = page.getByRole('navigation', { name: 'Server sections' });
    for (let i = 0; i < 3; i++) {
      await sections.getByRole('link', { name: 'Backups' }).click();
      await page.getByRole('heading', { name: 'Backups' }).waitFor();
      await sections.getByRole('link', { name: 'Console' }).click();
    }
    await output(page).getByText('> opened again', { exact: true }).waitFor({ timeout: 10_000 });
    expect(errors).toEqual([]);
    await context.close();
  });

  it('puts back a command the socket answered `throttled` to, and names it', async () => {
    const { page, errors, context } = await newPage(browser);
    // The page's clock runs on, but the test can move it: the console then believes the socket has room again.
    await page.clock.install();
    await signIn(page, svc.base, 'margaret', 'margaret-password-1', `/server/${server.identifier}`);
    await startServer(page);
    let held = false;
    for (let i = 1; i <= 30 && !held; i++) held = await enterCommand(page, `fill ${i}`);
    expect(held).toBe(true);
    // A minute later by the page's clock, a few seconds by the socket's: the socket refuses what the console sends.
    await page.clock.setSystemTime(Date.now() + 60_000);
    let refused = '';
    for (let i = 1; i <= 10 && !refused; i++) {
      await enterCommand(page, `again ${i}`);
      await new Promise((resolve) => setTimeout(resolve, 150));
      if (await page.getByText(`Too many commands: “again ${i}” was not sent.`, { exact: false }).count()) refused = `again ${i}`;
    }
    expect(refused, 'a command the socket refused').not.toBe('');
    expect(await commandInput(page).inputValue()).toBe(refused);
    expect(await output(page).getByText(`> ${refused}`, { exact: true }).count()).toBe(0);
    // The socket will not say `throttled` again for the next one: the console holds it back meanwhile.
    // Its mirror refills a command every 1.1 s of the page's clock; the page's clock is set back behind
    // the refusal first, so that a slow test (two browsers on two busy cores) cannot outlast the hold.
    await page.clock.setSystemTime(Date.now());
    expect(await enterCommand(page, refused)).toBe(true);
    await page.locator('#console-command-notice').getByText(THROTTLED).waitFor();
    expect(errors).toEqual([]);
    await context.close();
  });

  it('says so when a power action is over the rate limit, and lets it be tried again', async () => {
    const own = await svc.echoServer('hasty', 'Hasty one');
    const { page, context } = await newPage(browser);
    await signIn(page, svc.base, 'hasty', 'hasty-password-1', `/server/${own.identifier}`);
    await page.getByText('No output yet.').waitFor();
    expect(await powerButton(page, 'Start').isEnabled()).toBe(true);
    // Spend this user's requests for the minute (RATE_LIMIT_PER_MINUTE, 720 by default), 50 at a time.
    const spent = await page.evaluate<number>(`(async () => {
      for (let round = 0; round < 40; round++) {
        const statuses = await Promise.all(Array.from({ length: 50 }, () => fetch('/api/client/account').then((r) => r.status)));
        if (statuses.includes(429)) return round;
      }
      return -1;
    })()`);
    expect(spent).toBeGreaterThanOrEqual(0);
    await powerButton(page, 'Start').click();
    await page.getByText('Too many requests: the server was not started. Wait a moment and try again.').waitFor();
    expect(await powerButton(page, 'Start').isEnabled()).toBe(true);
    await context.close();
  });
});
