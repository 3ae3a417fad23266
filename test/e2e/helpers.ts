import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { installEchoServer, ECHO_STARTUP } from '../helpers/containment.js';
import { ROOT, startDetached, waitHealthy, type StartedService } from '../platform/service-process.js';

/**
 * The web console end to end (docs/reference/web-console.md): the console built as `npm install`
 * builds it, a real service (`quetzal serve`) on a free port in a fresh
 * DATA_DIR on SQLite, users and servers made with the admin command line, and
 * Debian's Chromium driven by playwright-core, talking to 127.0.0.1 only.
 */

const BIN = path.join(ROOT, 'bin/quetzal.js');
export const RESULTS = path.join(ROOT, 'test-results');
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const AXE = fs.readFileSync(path.join(ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8');

function run(command: string, args: string[], options: { env?: NodeJS.ProcessEnv; input?: string } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, env: options.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdin.end(options.input ?? '');
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0
        ? resolve(stdout)
        : reject(new Error(`${path.basename(args[0] ?? command)} ${args.slice(1).join(' ')} exited ${code}:\n${stderr}`)),
    );
  });
}

/** Builds dist/console as `npm install` does (concurrent builds are safe: see scripts/build.js). */
export async function buildConsole(): Promise<void> {
  await run(process.execPath, [path.join(ROOT, 'scripts/build.js'), '--console-only']);
}

export interface ConsoleService {
  service: StartedService;
  base: string;
  /** An admin command against the service's DATA_DIR and database, `--json` added; its JSON answer. */
  cli<T = Record<string, unknown>>(args: string[], input?: string): Promise<T>;
  /** A user with a password (user:create --password-stdin). */
  user(username: string, password: string): Promise<{ uuid: string; username: string }>;
  /** A server owned by `owner` running the echo fixture (it answers each console line with "> line"). */
  echoServer(owner: string, name: string, extra?: string[]): Promise<{ uuid: string; identifier: string; name: string }>;
  stop(): Promise<void>;
}

export async function startConsoleService(env: Record<string, string> = {}): Promise<ConsoleService> {
  await buildConsole();
  const serviceEnv: Record<string, string> = {
    QUETZAL_BOOTSTRAP: 'off',
    LOG_LEVEL: 'warn',
    ...(process.env.CONTAINMENT ? { CONTAINMENT: process.env.CONTAINMENT } : {}),
    ...(process.env.SERVER_UID ? { SERVER_UID: process.env.SERVER_UID } : {}),
    ...env,
  };
  const service = await startDetached(process.execPath, [BIN, 'serve'], serviceEnv);
  try {
    await waitHealthy(service, 30_000);
  } catch (err) {
    service.dispose();
    throw err;
  }
  const cliEnv = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    DATA_DIR: service.dataDir,
    LOG_LEVEL: 'warn',
    ...serviceEnv,
  };
  const cli = async <T>(args: string[], input?: string): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      try {
        const stdout = await run(process.execPath, [BIN, ...args, '--json'], {
          env: cliEnv,
          ...(input !== undefined ? { input } : {}),
        });
        return JSON.parse(stdout) as T;
      } catch (err) {
        // The service writes to the same SQLite file meanwhile; a command that met its lock changed nothing.
        if (attempt >= 3 || !String(err).includes('database is locked')) throw err;
        await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
      }
    }
  };
  return {
    service,
    base: `http://127.0.0.1:${service.port}`,
    cli,
    user: (username, password) =>
      cli(['user:create', '--username', username, '--email', `${username}@example.com`, '--password-stdin'], `${password}\n`),
    async echoServer(owner, name, extra = []) {
      const server = await cli<{ uuid: string; identifier: string; name: string }>([
        'server:create',
        '--owner',
        owner,
        '--name',
        name,
        `--startup=${ECHO_STARTUP}`,
        ...extra,
      ]);
      installEchoServer(path.join(service.dataDir, 'volumes', server.uuid));
      return server;
    },
    async stop() {
      try {
        process.kill(-service.proc.pid!, 'SIGTERM');
      } catch {
        // Already gone.
      }
      await Promise.race([service.exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
      service.dispose();
    },
  };
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** What each page saw (console messages, failed or refused requests), for a failure's message. */
const pageLogs = new WeakMap<Page, string[]>();

/** A fresh browser profile (its own cookies), at a desktop size; page errors fail the test that looks. */
export async function newPage(browser: Browser): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, timezoneId: 'UTC', locale: 'en-GB' });
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const errors: string[] = [];
  const log: string[] = [];
  pageLogs.set(page, log);
  page.on('pageerror', (error) => {
    errors.push(error.message);
    log.push(`pageerror: ${error.message}`);
  });
  page.on('console', (message) => log.push(`console.${message.type()}: ${message.text()}`));
  page.on('requestfailed', (request) => log.push(`failed: ${request.url()} ${request.failure()?.errorText ?? ''}`));
  page.on('response', (response) => {
    if (response.status() >= 400) log.push(`${response.status()}: ${response.url()}`);
  });
  return { context, page, errors };
}

/** The page's address, what it shows and what it logged: what a timed-out wait says. */
async function describePage(page: Page): Promise<string> {
  const text = await page.evaluate<string>('document.body ? document.body.innerText : "(no body)"').catch(() => '(unreadable)');
  return `at ${page.url()}, showing ${JSON.stringify(text.slice(0, 300))}; log: ${JSON.stringify(pageLogs.get(page) ?? [])}`;
}

/**
 * Resolves when one of the page's requests fails with ERR_NETWORK_CHANGED:
 * Chromium aborts every request in flight, loopback included, when an
 * interface or address of its network namespace changes, as the tests that
 * make servers' network namespaces do (a veth's host end comes and goes).
 */
function networkChange(page: Page): { seen: Promise<void>; dispose: () => void } {
  let dispose = (): void => {};
  const seen = new Promise<void>((resolve) => {
    const onFailed = (request: { failure(): { errorText: string } | null }): void => {
      if (request.failure()?.errorText.includes('ERR_NETWORK_CHANGED')) resolve();
    };
    page.on('requestfailed', onFailed);
    dispose = () => page.off('requestfailed', onFailed);
  });
  return { seen, dispose };
}

const SIGN_IN_LOADS = 4;

/**
 * Opens `path` signed out and signs in through the form. A load that a
 * network change cut short (networkChange above) is loaded again at once,
 * up to SIGN_IN_LOADS times, saying so on stderr; otherwise the form's
 * first field gets 20 s, then one more load, and a miss fails with what the
 * page showed and logged.
 */
export async function signIn(page: Page, base: string, user: string, password: string, path = '/'): Promise<void> {
  const field = page.getByLabel('Username or email');
  for (let load = 1; ; load++) {
    const change = networkChange(page);
    try {
      const outcome = await Promise.race([
        page
          .goto(base + path)
          .then(() => field.waitFor({ timeout: 20_000 }))
          .then(
            () => 'form' as const,
            (error: unknown) => (String(error).includes('ERR_NETWORK_CHANGED') ? ('changed' as const) : error),
          ),
        change.seen.then(() => 'changed' as const),
      ]);
      if (outcome === 'form') break;
      const why = outcome === 'changed' ? 'a network change cut the load short' : 'no sign-in form after 20 s';
      if (load >= SIGN_IN_LOADS || (outcome !== 'changed' && load >= 2)) {
        throw new Error(`no sign-in form (${why}) ${await describePage(page)}`, {
          cause: outcome === 'changed' ? undefined : outcome,
        });
      }
      console.error(`e2e signIn: ${why}, loading again; the page was ${await describePage(page)}`);
    } finally {
      change.dispose();
    }
  }
  await field.fill(user);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

/**
 * What every page is held to: no serious or critical axe-core violation, a
 * full-page screenshot in test-results/<name>.png, and at 375 px wide no
 * horizontal scroll (and a second screenshot, <name>-375.png).
 */
export async function auditPage(page: Page, name: string): Promise<void> {
  await page.evaluate(AXE);
  // In-page code as text: this project's TypeScript has no DOM types.
  const violations = await page.evaluate<string[]>(`(async () => {
    const result = await window.axe.run();
    return result.violations
      .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
      .map((violation) => violation.id + ' (' + violation.impact + '): ' + JSON.stringify(violation.nodes.map((node) => node.target)));
  })()`);
  fs.mkdirSync(RESULTS, { recursive: true });
  await page.screenshot({ path: path.join(RESULTS, `${name}.png`), fullPage: true });
  expect(violations, `axe-core on ${name}`).toEqual([]);

  const size = page.viewportSize() ?? { width: 1280, height: 800 };
  await page.setViewportSize({ width: 375, height: 812 });
  try {
    await page.waitForFunction('window.innerWidth === 375');
    const scrollWidth = await page.evaluate<number>('document.documentElement.scrollWidth');
    await page.screenshot({ path: path.join(RESULTS, `${name}-375.png`), fullPage: true });
    expect(scrollWidth, `${name} at 375 px: document.documentElement.scrollWidth`).toBeLessThanOrEqual(375);
  } finally {
    await page.setViewportSize(size);
  }
}

/** Polls `check` until it holds (an API-side condition a page waits on). */
export async function eventually<T>(check: () => Promise<T | undefined | null | false>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
