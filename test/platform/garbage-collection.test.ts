import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT, sleep, startDetached, waitHealthy, type StartedService } from './service-process.js';

/**
 * The service stays up through major garbage collections run outside any
 * JavaScript context, under requests with idle gaps between them. With
 * better-sqlite3 12 on Node 24.19+ it aborted (`Assertion failed: (env) !=
 * nullptr` in node::RemoveEnvironmentCleanupHook, from the destructor of a
 * collected connection or statement); this test is meant for the Node 24 pass
 * of .ci/run and is harmless elsewhere. QUETZAL_SQLITE_DRIVER, when set, is
 * passed on, so that it can be shown failing with the old driver.
 */

const GC_PRESSURE = path.join(ROOT, 'test/fixtures/gc-pressure.mjs');

describe('garbage collection in a running service', () => {
  let service: StartedService | undefined;
  afterEach(() => service?.dispose());

  it('stays up and answering through requests, idle gaps and forced collections', async () => {
    const forced: Record<string, string> = {};
    if (process.env.QUETZAL_SQLITE_DRIVER) forced.QUETZAL_SQLITE_DRIVER = process.env.QUETZAL_SQLITE_DRIVER;
    service = await startDetached(process.execPath, ['--import', GC_PRESSURE, path.join(ROOT, 'bin/quetzal.js'), 'serve'], {
      LOG_LEVEL: 'warn',
      ...forced,
    });
    await waitHealthy(service, 60_000);
    const token = fs.readFileSync(path.join(service.dataDir, 'initial-api-key'), 'utf8').trim();
    const base = `http://127.0.0.1:${service.port}`;
    const headers = { authorization: `Bearer ${token}`, accept: 'application/json' };
    const list = (await (await fetch(`${base}/api/client`, { headers })).json()) as {
      data: { attributes: { identifier: string } }[];
    };
    const server = list.data[0]!.attributes.identifier;

    // Bursts of requests that touch the database, each followed by an idle second.
    for (let round = 0; round < 8; round++) {
      for (let i = 0; i < 10; i++) {
        for (const url of [`/api/client/servers/${server}`, `/api/client/servers/${server}/activity`, '/health']) {
          const res = await fetch(`${base}${url}`, { headers });
          expect(res.status, `${url} in round ${round}:\n${service.output()}`).toBe(200);
          await res.arrayBuffer();
        }
      }
      await sleep(1000);
    }

    expect(service.proc.exitCode, service.output()).toBeNull();
    expect(service.proc.signalCode, service.output()).toBeNull();
    expect((await fetch(`${base}/health`)).status).toBe(200);
    expect(service.output()).not.toMatch(/Assertion failed|Native stack trace/);

    service.proc.kill('SIGTERM');
    expect(await service.exited).toEqual({ code: 0, signal: null });
    expect(service.output()).not.toMatch(/Assertion failed|Native stack trace/);
  }, 120_000);
});
