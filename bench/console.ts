/**
 * Web console benchmark (issue 12 part 3, docs/reference/web-console.md):
 *
 * - the console's initial JavaScript, gzipped (level 9): the entry script and
 *   the chunks index.html preloads, what a browser must fetch before the first
 *   page renders; the stylesheet and the whole build (every lazy page) beside
 *   it. Target ≤ 200 KB.
 * - the time to the first rendered server list on loopback, signed in: in
 *   Debian's Chromium (playwright-core), from the navigation's start
 *   (performance.timeOrigin) to the moment the list is in the page, recorded
 *   by the page itself; cold (a fresh browser profile carrying only the
 *   session cookie: nothing cached) and warm (a reload: hashed files cached).
 *   Same-run baseline: the same navigation to `/health` (a few bytes of JSON),
 *   the floor of a navigation on this machine. Target ≤ 1 s.
 * - the console's fan-out (bench/lib/console-fanout.ts): one server printing
 *   1,000 time-stamped lines a second to 50 signed-in websockets for 60 s;
 *   p99 delivery latency (target ≤ 50 ms) and the service's RSS before and
 *   after (target: no growth beyond 20 MiB).
 *
 *   npm run bench:console -- [--rounds 15] [--servers 20] [--sockets 50] [--lines 1000] [--seconds 60]
 *
 * The service is the one `npm start` runs (`bin/quetzal.js serve`: the
 * bundle when current), SQLite in a fresh DATA_DIR, the console built first
 * as `npm install` builds it.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';
import { measureFanOut } from './lib/console-fanout.js';
import { freePort } from './lib/ports.js';
import { formatMs, percentile } from './lib/stats.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(ROOT, 'bin/quetzal.js');
const CONSOLE_DIR = path.join(ROOT, 'dist/console');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const TARGET_INITIAL_JS_KB = 200;
const TARGET_LIST_MS = 1000;

function option(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  const value = index >= 0 ? Number(process.argv[index + 1]) : fallback;
  if (!Number.isInteger(value) || value <= 0) throw new Error(`--${name} must be a positive whole number`);
  return value;
}

const ROUNDS = option('rounds', 15);
const SERVERS = option('servers', 20);
const SOCKETS = option('sockets', 50);
const LINES_PER_SECOND = option('lines', 1000);
const FAN_OUT_SECONDS = option('seconds', 60);
const TARGET_FAN_OUT_P99_MS = 50;
const TARGET_RSS_GROWTH_MIB = 20;

// ------------------------------------------------------------------ sizes

const gzipped = (file: string) => zlib.gzipSync(fs.readFileSync(path.join(CONSOLE_DIR, file)), { level: 9 }).length;
const kb = (bytes: number) => bytes / 1024;

function bundleSizes() {
  const html = fs.readFileSync(path.join(CONSOLE_DIR, 'index.html'), 'utf8');
  const initial = [...html.matchAll(/(?:src|href)="\/([^"]+\.js)"/g)].map((match) => match[1]!);
  const stylesheet = /href="\/([^"]+\.css)"/.exec(html)?.[1];
  if (initial.length === 0 || !stylesheet) throw new Error('dist/console/index.html names no script or stylesheet');
  const everyScript = fs.readdirSync(CONSOLE_DIR).filter((file) => file.endsWith('.js'));
  return {
    initialFiles: initial.length,
    initialJsGzip: initial.reduce((sum, file) => sum + gzipped(file), 0),
    initialJsRaw: initial.reduce((sum, file) => sum + fs.statSync(path.join(CONSOLE_DIR, file)).size, 0),
    cssGzip: gzipped(stylesheet),
    allJsGzip: everyScript.reduce((sum, file) => sum + gzipped(file), 0),
    allJsFiles: everyScript.length,
  };
}

// ------------------------------------------------------------------ the service

interface Service {
  proc: ChildProcess;
  base: string;
  dataDir: string;
  env: NodeJS.ProcessEnv;
}

async function startService(): Promise<Service> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-bench-console-'));
  const port = await freePort();
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    PORT: String(port),
    LOG_LEVEL: 'warn',
    QUETZAL_BOOTSTRAP: 'off',
    RATE_LIMIT_PER_MINUTE: '100000',
    SFTP_PORT: '0',
  };
  const proc = spawn(process.execPath, [BIN, 'serve'], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
    detached: true,
  });
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`the service exited with ${proc.exitCode}`);
    if (
      await fetch(`${base}/health`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    if (Date.now() > deadline) throw new Error('the service did not become healthy in 30 s');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { proc, base, dataDir, env };
}

function cli(service: Service, args: string[], input = ''): unknown {
  return JSON.parse(
    execFileSync(process.execPath, [BIN, ...args, '--json'], { cwd: ROOT, env: service.env, input, encoding: 'utf8' }),
  );
}

// ------------------------------------------------------------------ the browser

/** Milliseconds from the navigation's start to the moment `selector` is in the page, as the page saw it (in-page code as text: no DOM types here). */
const RECORD_APPEARANCE = (selector: string) => `
  new MutationObserver((_, observer) => {
    if (document.querySelector(${JSON.stringify(selector)})) {
      window.__appearedAt = performance.now();
      observer.disconnect();
    }
  }).observe(document, { subtree: true, childList: true });
`;

async function timeToList(context: BrowserContext, base: string, reload: boolean): Promise<number> {
  const page = await context.newPage();
  try {
    await page.addInitScript(RECORD_APPEARANCE('ul[aria-label="Servers"] li'));
    await page.goto(`${base}/`);
    if (reload) await page.reload();
    await page.getByRole('list', { name: 'Servers' }).getByRole('link').first().waitFor({ timeout: 10_000 });
    return await page.evaluate<number>('window.__appearedAt');
  } finally {
    await page.close();
  }
}

async function timeToHealth(context: BrowserContext, base: string): Promise<number> {
  const page = await context.newPage();
  try {
    await page.goto(`${base}/health`);
    return await page.evaluate<number>("performance.getEntriesByType('navigation')[0]?.responseEnd ?? NaN");
  } finally {
    await page.close();
  }
}

const summary = (samples: number[]) => {
  const sorted = [...samples].sort((a, b) => a - b);
  return { median: percentile(sorted, 50), p95: percentile(sorted, 95), runs: sorted.length };
};

async function main() {
  execFileSync(process.execPath, [path.join(ROOT, 'scripts/build.js'), '--console-only'], { cwd: ROOT, stdio: 'inherit' });
  const sizes = bundleSizes();

  const service = await startService();
  let browser: Browser | undefined;
  try {
    cli(
      service,
      ['user:create', '--username', 'bench', '--email', 'bench@example.com', '--password-stdin'],
      'bench-password-1\n',
    );
    for (let i = 1; i <= SERVERS; i++) cli(service, ['server:create', '--owner', 'bench', '--name', `Server ${i}`]);

    browser = await chromium.launch({
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
    // Signed in once; every measured profile starts from these cookies.
    const signing = await browser.newContext();
    const page = await signing.newPage();
    await page.goto(service.base);
    await page.getByLabel('Username or email').fill('bench');
    await page.getByLabel('Password').fill('bench-password-1');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('list', { name: 'Servers' }).waitFor();
    const storageState = await signing.storageState();
    await signing.close();

    const cold: number[] = [];
    const warm: number[] = [];
    const baseline: number[] = [];
    for (let round = 0; round < ROUNDS + 1; round++) {
      const context = await browser.newContext({ storageState });
      const coldMs = await timeToList(context, service.base, false);
      const warmMs = await timeToList(context, service.base, true);
      const healthMs = await timeToHealth(context, service.base);
      await context.close();
      if (round === 0) continue; // The service's and the browser's first request of each kind.
      cold.push(coldMs);
      warm.push(warmMs);
      baseline.push(healthMs);
    }

    const coldStats = summary(cold);
    const warmStats = summary(warm);
    const baselineStats = summary(baseline);
    console.log('\nWeb console: initial JavaScript (gzip -9)');
    console.log(
      `  initial JS   ${kb(sizes.initialJsGzip).toFixed(1)} KB gzipped (${kb(sizes.initialJsRaw).toFixed(1)} KB raw, ${sizes.initialFiles} files)   target ≤ ${TARGET_INITIAL_JS_KB} KB`,
    );
    console.log(`  stylesheet   ${kb(sizes.cssGzip).toFixed(1)} KB gzipped`);
    console.log(`  all JS       ${kb(sizes.allJsGzip).toFixed(1)} KB gzipped (${sizes.allJsFiles} files, every page)`);
    console.log(`\nTime to the first rendered server list, signed in, ${SERVERS} servers, ${ROUNDS} rounds (median / p95)`);
    console.log(`  cold profile ${formatMs(coldStats.median)} / ${formatMs(coldStats.p95)}   target ≤ ${TARGET_LIST_MS} ms`);
    console.log(`  warm reload  ${formatMs(warmStats.median)} / ${formatMs(warmStats.p95)}`);
    console.log(`  baseline: navigation to /health ${formatMs(baselineStats.median)} / ${formatMs(baselineStats.p95)}`);

    // The websocket half (docs/reference/power-and-console.md#websocket): one server's console fanned out to many sockets.
    const websocketFanOut = await measureFanOut({
      base: service.base,
      dataDir: service.dataDir,
      servicePid: service.proc.pid!,
      createServer: (startup) => {
        const created = cli(service, ['server:create', '--owner', 'bench', '--name', 'Fan-out', '--startup', startup]) as {
          uuid: string;
          identifier: string;
        };
        return created;
      },
      addWatcher: (serverIdentifier, index) => {
        const username = `watcher${index}`;
        cli(
          service,
          ['user:create', '--username', username, '--email', `${username}@example.com`, '--password-stdin'],
          'watcher-password-1\n',
        );
        cli(service, ['subuser:add', '--server', serverIdentifier, '--user', username, '--permissions', 'websocket.connect']);
        return { username, password: 'watcher-password-1' };
      },
      username: 'bench',
      password: 'bench-password-1',
      sockets: SOCKETS,
      linesPerSecond: LINES_PER_SECOND,
      seconds: FAN_OUT_SECONDS,
    });
    const fan = websocketFanOut;
    console.log(
      `\nConsole fan-out: ${fan.linesPerSecond} lines/s from one server to ${fan.sockets} sockets for ${fan.seconds} s`,
    );
    console.log(
      `  the server printed ${fan.printed} lines (${(fan.printed / fan.seconds).toFixed(0)}/s); delivered ${fan.delivered} line frames ` +
        `(${(fan.delivered / fan.sockets / Math.max(1, fan.printed)).toFixed(3)} of each line per socket), ${fan.droppedSockets} sockets dropped; ` +
        `latency p50 ${formatMs(fan.latencyMs.p50)} ms, p99 ${formatMs(fan.latencyMs.p99)} ms (target ≤ ${TARGET_FAN_OUT_P99_MS}), max ${formatMs(fan.latencyMs.max)} ms`,
    );
    console.log(
      `  service RSS ${fan.rssMiB.before} MiB before, ${fan.rssMiB.after} MiB after: ${fan.rssMiB.growth} MiB (target ≤ ${TARGET_RSS_GROWTH_MIB})`,
    );

    const result = {
      bench: 'console',
      initialJsGzipKB: Number(kb(sizes.initialJsGzip).toFixed(1)),
      initialJsTargetKB: TARGET_INITIAL_JS_KB,
      cssGzipKB: Number(kb(sizes.cssGzip).toFixed(1)),
      allJsGzipKB: Number(kb(sizes.allJsGzip).toFixed(1)),
      serverListColdMs: { median: Number(coldStats.median.toFixed(1)), p95: Number(coldStats.p95.toFixed(1)) },
      serverListWarmMs: { median: Number(warmStats.median.toFixed(1)), p95: Number(warmStats.p95.toFixed(1)) },
      baselineHealthMs: { median: Number(baselineStats.median.toFixed(1)), p95: Number(baselineStats.p95.toFixed(1)) },
      serverListTargetMs: TARGET_LIST_MS,
      servers: SERVERS,
      rounds: ROUNDS,
      websocketFanOut,
      meetsTargets:
        sizes.initialJsGzip / 1024 <= TARGET_INITIAL_JS_KB &&
        coldStats.p95 <= TARGET_LIST_MS &&
        fan.latencyMs.p99 <= TARGET_FAN_OUT_P99_MS &&
        fan.rssMiB.growth <= TARGET_RSS_GROWTH_MIB,
    };
    console.log(`\n${JSON.stringify(result)}`);
  } finally {
    await browser?.close();
    try {
      process.kill(-service.proc.pid!, 'SIGTERM');
    } catch {
      // Already gone.
    }
    await new Promise((resolve) => (service.proc.exitCode !== null ? resolve(null) : service.proc.once('exit', resolve)));
    fs.rmSync(service.dataDir, { recursive: true, force: true });
  }
}

await main();
