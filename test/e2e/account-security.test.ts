import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateSync } from 'otplib';
import type { Browser, Page } from 'playwright-core';
import { encode } from 'uqr';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESULTS, auditPage, launchBrowser, newPage, signIn, startConsoleService, type ConsoleService } from './helpers.js';

/**
 * The account page's security cards end to end (docs/ACCOUNT.md): two-factor
 * set up from the page (QR code and key, a code computed from the key shown,
 * recovery tokens once), used at sign-in and turned off; SSH keys added (the
 * fingerprint is ssh-keygen's), refused (the API's 422) and removed; the email
 * changed, and the account's activity telling all of it.
 */

let svc: ConsoleService;
let browser: Browser;
let tmp = '';

beforeAll(async () => {
  [svc, browser] = await Promise.all([startConsoleService(), launchBrowser()]);
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-account-'));
  // One admin command at a time: concurrent ones can meet SQLite's "database is locked".
  await svc.user('tina', 'tina-password-1');
  await svc.user('sam', 'sam-password-1');
  await svc.user('eve', 'eve-password-1');
});

afterAll(async () => {
  await browser?.close();
  await svc?.stop();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

/** Whether signing in with the password alone completes (two-factor off) or stops at the checkpoint (on). */
async function passwordAloneSignsIn(user: string, password: string): Promise<boolean> {
  const res = await fetch(`${svc.base}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ user, password }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: { complete: boolean } }).data.complete;
}

/** The module matrix an <img> of uqr's SVG shows: one `M x,y h..v..h-..z` square per dark module. */
function modulesOf(svg: string): boolean[][] {
  const box = /viewBox="0 0 (\d+) (\d+)"/.exec(svg);
  expect(box?.[1]).toBe(box?.[2]);
  const squares = [...svg.matchAll(/M(\d+),(\d+)h(\d+)/g)].map((m) => m.slice(1, 4).map(Number) as [number, number, number]);
  const pixel = squares[0]![2];
  const size = Number(box![1]) / pixel;
  const grid = Array.from({ length: size }, () => Array.from({ length: size }, () => false));
  for (const [x, y] of squares) grid[y / pixel]![x / pixel] = true;
  return grid;
}

/** A six-digit code the key does not give at this moment or a step either side. */
function wrongCode(secret: string): string {
  const now = Math.floor(Date.now() / 1000);
  const valid = new Set([-30, 0, 30].map((shift) => generateSync({ secret, epoch: now + shift })));
  for (let n = 0; ; n++) {
    const candidate = String(n).padStart(6, '0');
    if (!valid.has(candidate)) return candidate;
  }
}

async function openSetup(page: Page): Promise<{ secret: string; url: string }> {
  const answer = page.waitForResponse(
    (response) => response.url().endsWith('/api/client/account/two-factor') && response.request().method() === 'GET',
  );
  await page.getByRole('button', { name: 'Set up two-factor' }).click();
  const url = ((await (await answer).json()) as { data: { image_url_data: string } }).data.image_url_data;
  const shown = (await page.locator('#two-factor-secret').textContent()) ?? '';
  return { secret: shown.replace(/\s+/g, ''), url };
}

describe('the account page: two-factor, SSH keys, email and activity', () => {
  it('sets two-factor up from the QR code’s key, refuses a wrong code, shows the recovery tokens once, signs in with a code and turns it off', async () => {
    const { page, errors, context } = await newPage(browser);
    await signIn(page, svc.base, 'tina', 'tina-password-1', '/account');
    await page.getByText('Two-factor authentication is off.', { exact: false }).waitFor();

    const { secret, url } = await openSetup(page);
    // The key shown for typing by hand is the one the QR code carries.
    expect(new URL(url).searchParams.get('secret')).toBe(secret);
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    const qr = page.getByRole('img', { name: 'QR code for your authenticator app' });
    const source = (await qr.getAttribute('src')) ?? '';
    expect(source.startsWith('data:image/svg+xml')).toBe(true);
    const svg = decodeURIComponent(source.slice(source.indexOf(',') + 1));
    expect(svg).toContain('fill="#ffffff"');
    expect(svg).toContain('fill="#000000"');
    // Square, a quiet zone of four light modules, and the modules of the otpauth URL itself.
    const modules = modulesOf(svg);
    const expected = encode(url, { ecc: 'M', border: 4 }).data;
    expect(modules).toEqual(expected);
    expect(modules.slice(0, 4).flat().some(Boolean)).toBe(false);
    expect(
      modules
        .map((row) => row.slice(0, 4))
        .flat()
        .some(Boolean),
    ).toBe(false);
    const box = await qr.boundingBox();
    expect(box && Math.abs(box.width - box.height)).toBeLessThan(1);
    expect(box!.width).toBeGreaterThanOrEqual(150);
    const code = page.getByLabel('Code from the app');
    expect(await code.getAttribute('inputmode')).toBe('numeric');
    expect(await code.getAttribute('autocomplete')).toBe('one-time-code');
    await qr.screenshot({ path: path.join(RESULTS, 'account-two-factor-qr.png') });
    await auditPage(page, 'account-two-factor');

    // A wrong code: the API's message beside the form, and two-factor stays off.
    await code.fill(wrongCode(secret));
    await page.getByLabel('Your password').fill('tina-password-1');
    await page.getByRole('button', { name: 'Turn on two-factor' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toBe('The two-factor authentication token provided was not valid.');
    expect(await passwordAloneSignsIn('tina', 'tina-password-1')).toBe(true);

    await code.fill(generateSync({ secret }));
    await page.getByRole('button', { name: 'Turn on two-factor' }).click();
    const tokens = page.getByRole('list', { name: 'Recovery tokens' }).getByRole('listitem');
    await tokens.first().waitFor();
    const recovery = await tokens.allTextContents();
    expect(recovery).toHaveLength(10);
    for (const token of recovery) expect(token).toMatch(/^[A-Za-z0-9]{10}$/);
    expect(await passwordAloneSignsIn('tina', 'tina-password-1')).toBe(false);
    await auditPage(page, 'account-recovery-tokens');
    await page.getByRole('button', { name: 'I have saved these' }).click();
    await page.getByRole('button', { name: 'Disable two-factor' }).waitFor();
    expect(await page.getByRole('list', { name: 'Recovery tokens' }).count()).toBe(0);
    // Shown once: a reload knows two-factor is on and shows no token.
    await page.reload();
    await page.getByRole('button', { name: 'Disable two-factor' }).waitFor();
    expect(await page.content()).not.toContain(recovery[0]);

    // Signed out, signing in asks for the code: the next step's (each step's code is good once).
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Username or email').fill('tina');
    await page.getByLabel('Password').fill('tina-password-1');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('This account uses two-factor authentication.').waitFor();
    await page.getByLabel('Authentication code').fill(generateSync({ secret, epoch: Math.floor(Date.now() / 1000) + 30 }));
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();

    // Turning it off asks for the password; a wrong one is refused in the dialog.
    await page.goto(`${svc.base}/account`);
    await page.getByRole('button', { name: 'Disable two-factor' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Your password').fill('not-the-password');
    await dialog.getByRole('button', { name: 'Disable two-factor' }).click();
    await dialog.getByRole('alert').waitFor();
    expect(await passwordAloneSignsIn('tina', 'tina-password-1')).toBe(false);
    await dialog.getByLabel('Your password').fill('tina-password-1');
    await dialog.getByRole('button', { name: 'Disable two-factor' }).click();
    await page.getByRole('button', { name: 'Set up two-factor' }).waitFor();
    expect(await passwordAloneSignsIn('tina', 'tina-password-1')).toBe(true);

    // The account's activity tells it.
    const activity = page.getByRole('list', { name: 'Account activity' });
    await expect.poll(async () => (await activity.textContent()) ?? '').toContain('Turned off two-factor authentication');
    expect(await activity.textContent()).toContain('Turned on two-factor authentication');
    expect(errors).toEqual([]);
    await context.close();
  });

  it('adds an SSH key (its fingerprint is ssh-keygen’s), refuses a bad one with the API’s message, and removes it', async () => {
    const keyFile = path.join(tmp, 'id_ed25519');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'sam@laptop', '-f', keyFile]);
    const publicKey = fs.readFileSync(`${keyFile}.pub`, 'utf8').trim();
    const fingerprint = execFileSync('ssh-keygen', ['-lf', `${keyFile}.pub`], { encoding: 'utf8' }).split(' ')[1]!;
    expect(fingerprint).toMatch(/^SHA256:/);

    const { page, errors, context } = await newPage(browser);
    await signIn(page, svc.base, 'sam', 'sam-password-1', '/account');
    await page.getByText('No SSH keys.').waitFor();

    await page.getByLabel('Key name').fill('broken');
    await page.getByLabel('Public key').fill('ssh-ed25519 not-a-key');
    await page.getByRole('button', { name: 'Add SSH key' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toBe('The public key provided is not valid.');

    await page.getByLabel('Key name').fill('Laptop');
    await page.getByLabel('Public key').fill(publicKey);
    await page.getByRole('button', { name: 'Add SSH key' }).click();
    const list = page.getByRole('list', { name: 'SSH keys' });
    await list.waitFor();
    expect(await list.getByRole('listitem').count()).toBe(1);
    expect(await list.textContent()).toContain('Laptop');
    expect(await list.locator('.fingerprint').textContent()).toBe(fingerprint);
    expect(await alert.count()).toBe(0);
    // The form is empty again, ready for the next key.
    expect(await page.getByLabel('Public key').inputValue()).toBe('');
    const stored = await page.request.get(`${svc.base}/api/client/account/ssh-keys`);
    expect(((await stored.json()) as { data: { attributes: { fingerprint: string } }[] }).data[0]?.attributes.fingerprint).toBe(
      fingerprint,
    );
    await auditPage(page, 'account-ssh-keys');

    await page.getByRole('button', { name: 'Remove SSH key Laptop' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Remove' }).click();
    await page.getByText('No SSH keys.').waitFor();
    const after = await page.request.get(`${svc.base}/api/client/account/ssh-keys`);
    expect(((await after.json()) as { data: unknown[] }).data).toEqual([]);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('changes the email with the password (a wrong password refused), and the header shows the new one', async () => {
    const { page, errors, context } = await newPage(browser);
    await signIn(page, svc.base, 'eve', 'eve-password-1', '/account');
    await page.getByLabel('New email address').fill('eve@new.example.com');
    await page.getByLabel('Password (to confirm the change)').fill('wrong-password');
    await page.getByRole('button', { name: 'Change email' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toBe('The password provided was invalid for this account.');

    await page.getByLabel('Password (to confirm the change)').fill('eve-password-1');
    await page.getByRole('button', { name: 'Change email' }).click();
    await page.getByText('Your email address has been changed.').waitFor();
    await page.getByText('Signed in as eve (eve@new.example.com).').waitFor();
    const activity = page.getByRole('list', { name: 'Account activity' });
    await expect.poll(async () => (await activity.textContent()) ?? '').toContain('Changed the account email');
    expect(await passwordAloneSignsIn('eve@new.example.com', 'eve-password-1')).toBe(true);
    expect(errors).toEqual([]);
    await context.close();
  });
});
