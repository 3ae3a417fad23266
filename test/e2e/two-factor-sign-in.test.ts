import { generateSync } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { auditPage, launchBrowser, newPage, startConsoleService, type ConsoleService } from './helpers.js';

/**
 * Signing in to the console with two-factor on (docs/ACCOUNT.md): the
 * password, then the authenticator's code or a recovery token; a wrong code
 * says so and signs nobody in.
 */

let svc: ConsoleService;
let browser: Browser;
let secret = '';
let recoveryTokens: string[] = [];
const PASSWORD = 'tfa-password-1';

async function api<T>(token: string, method: string, url: string, body?: unknown): Promise<T> {
  const res = await fetch(`${svc.base}/api/client${url}`, {
    method,
    headers: { authorization: `Bearer ${token}`, accept: 'application/json', 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  expect(res.status, `${method} ${url}`).toBeLessThan(300);
  return (await res.json()) as T;
}

beforeAll(async () => {
  [svc, browser] = await Promise.all([startConsoleService(), launchBrowser()]);
  await svc.user('tess', PASSWORD);
  const { token } = await svc.cli<{ token: string }>(['key:create', '--user', 'tess']);
  const setup = await api<{ data: { image_url_data: string } }>(token, 'GET', '/account/two-factor');
  secret = new URL(setup.data.image_url_data).searchParams.get('secret') ?? '';
  const enabled = await api<{ attributes: { tokens: string[] } }>(token, 'POST', '/account/two-factor', {
    code: generateSync({ secret }),
    password: PASSWORD,
  });
  recoveryTokens = enabled.attributes.tokens;
});

afterAll(async () => {
  await browser?.close();
  await svc?.stop();
});

async function passwordStep(page: import('playwright-core').Page) {
  await page.goto(svc.base);
  await page.getByLabel('Username or email').fill('tess');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByText('This account uses two-factor authentication.').waitFor();
}

describe('the web console: signing in with two-factor', () => {
  it('asks for the code after the password; a wrong one is refused, the next step’s code signs in', async () => {
    const { page, errors, context } = await newPage(browser);
    await passwordStep(page);
    expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
    await auditPage(page, 'sign-in-two-factor');

    await page.getByLabel('Authentication code').fill('000000');
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);

    // The step after the one that enabled it (a code is good once per step; the service accepts one step either side).
    await page.getByLabel('Authentication code').fill(generateSync({ secret, epoch: Math.floor(Date.now() / 1000) + 30 }));
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    expect(errors).toEqual([]);
    await context.close();
  });

  it('takes a recovery token instead, once', async () => {
    const { page, errors, context } = await newPage(browser);
    await passwordStep(page);
    await page.getByRole('button', { name: 'Use a recovery token' }).click();
    await page.getByLabel('Recovery token').fill(recoveryTokens[0]!);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await context.close();

    const again = await newPage(browser);
    await passwordStep(again.page);
    await again.page.getByRole('button', { name: 'Use a recovery token' }).click();
    await again.page.getByLabel('Recovery token').fill(recoveryTokens[0]!);
    await again.page.getByRole('button', { name: 'Continue' }).click();
    await again.page.getByRole('alert').waitFor();
    expect(await again.page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
    expect(errors).toEqual([]);
    await again.context.close();
  });
});
