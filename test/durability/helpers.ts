import { createHash, randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Kysely } from 'kysely';
import { expect } from 'vitest';
import type { Tables } from '../../src/db/schema.js';
import { startService, type ServiceProcess } from '../cli/helpers.js';

/** A tree to write: a path ending in '/' is a folder, anything else a file with these bytes. */
export type TreeSpec = Record<string, Buffer | 'dir'>;

/** A server's data as it is backed up: a few hundred small files, a few larger ones, nested folders. */
export function backupTree(scale = 1): TreeSpec {
  const tree: TreeSpec = {
    'config.yml': Buffer.from('motd: hello\nmax-players: 20\n'),
    'server.properties': Buffer.from('level-name=world\n'),
    'empty/': 'dir',
    'world/big.dat': randomBytes(2 * 1024 * 1024 * scale),
    'plugins/big.jar': randomBytes(1024 * 1024 * scale),
  };
  for (let i = 0; i < 200 * scale; i += 1) tree[`world/region/r.${i}.mca`] = randomBytes(512 + (i % 8) * 512);
  for (let i = 0; i < 60 * scale; i += 1) tree[`plugins/p${i % 12}/data/${i}.yml`] = Buffer.from(`plugin ${i}\n`.repeat(20));
  for (let i = 0; i < 40; i += 1) tree[`logs/${i}.log.gz`] = randomBytes(300);
  return tree;
}

/** The volume when the restore starts: the backup's tree with one file changed, one new and a new folder. */
export function changedTree(backup: TreeSpec): TreeSpec {
  return {
    ...backup,
    'config.yml': Buffer.from('motd: changed after the backup\n'),
    'new-file.txt': Buffer.from('made after the backup'),
    'world/newdir/x.txt': Buffer.from('also new'),
  };
}

/** Empties `dir` (keeping the folder itself) and writes `tree` into it. */
export function writeTree(dir: string, tree: TreeSpec): void {
  for (const name of fs.readdirSync(dir)) fs.rmSync(path.join(dir, name), { recursive: true, force: true });
  for (const [name, content] of Object.entries(tree)) {
    if (content === 'dir') {
      fs.mkdirSync(path.join(dir, name), { recursive: true });
      continue;
    }
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), content);
  }
}

/** path → type, mode and sha256 of the content, for every entry under `dir`. */
export function snapshotTree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const entry of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const child = rel === '' ? entry.name : `${rel}/${entry.name}`;
      const full = path.join(dir, child);
      if (entry.isSymbolicLink()) out[child] = `link ${fs.readlinkSync(full)}`;
      else if (entry.isDirectory()) {
        out[`${child}/`] = 'dir';
        walk(child);
      } else {
        const mode = (fs.statSync(full).mode & 0o777).toString(8);
        out[child] = `file ${mode} ${createHash('sha256').update(fs.readFileSync(full)).digest('hex')}`;
      }
    }
  };
  walk('');
  return out;
}

export function restoreLeftovers(dataDir: string): string[] {
  return fs.readdirSync(path.join(dataDir, 'volumes')).filter((name) => name.startsWith('.restore-'));
}

/** Resolves with the signal the service died of (the helper's stop() only gives the code). */
export function deathOf(service: ServiceProcess, timeoutMs = 30_000): Promise<NodeJS.Signals | null> {
  const { child } = service;
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.signalCode);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the service did not die:\n${service.stderr()}`)), timeoutMs);
    child.once('exit', (_code, signal) => {
      clearTimeout(timer);
      resolve(signal);
    });
  });
}

export async function api(
  service: ServiceProcess,
  token: string,
  method: string,
  url: string,
  body?: unknown,
): Promise<{ status: number; body: any }> {
  const response = await fetch(`${service.url}/api/client${url}`, {
    method,
    headers: { authorization: `Bearer ${token}`, accept: 'application/json', 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

/** Polls `probe` until it returns true. */
export async function waitFor(what: string, probe: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export async function statusOf(service: ServiceProcess, token: string, server: string): Promise<string | null> {
  const res = await api(service, token, 'GET', `/servers/${server}`);
  expect(res.status).toBe(200);
  return res.body.attributes.status as string | null;
}

/** serve, SCHEDULER off (the scheduler has no part here), on the sandbox's env. */
export function serve(env: Record<string, string>, crashAt?: string): Promise<ServiceProcess> {
  return startService('serve', { ...env, SCHEDULER: 'off', ...(crashAt ? { QUETZAL_TEST_CRASH_AT: crashAt } : {}) });
}

/**
 * Plants what an instance that died mid-restore leaves: the server's status
 * `restoring_backup` and its `backup_restores` row held by `owner` until
 * `leaseExpiresAt` (the caller writes the restore folder and journal, before
 * this where a running service could look in between). Returns the row's id,
 * which names `volumes/.restore-<id>`.
 */
export async function plantAbandonedRestore(
  db: Kysely<Tables>,
  opts: { server: string; backup: string; truncate: boolean; owner: string; leaseExpiresAt: number; id?: string },
): Promise<{ id: string; serverId: number; folder: (dataDir: string) => string }> {
  const serverRow = await db.selectFrom('servers').selectAll().where('uuid', '=', opts.server).executeTakeFirstOrThrow();
  const backup = await db.selectFrom('backups').selectAll().where('uuid', '=', opts.backup).executeTakeFirstOrThrow();
  const id = opts.id ?? randomUUID();
  await db.transaction().execute(async (trx) => {
    await trx.updateTable('servers').set({ status: 'restoring_backup' }).where('id', '=', serverRow.id).execute();
    await trx
      .insertInto('backup_restores')
      .values({
        id,
        server_id: serverRow.id,
        backup_id: backup.id,
        truncate: opts.truncate ? 1 : 0,
        owner: opts.owner,
        lease_expires_at: opts.leaseExpiresAt,
        created_at: Date.now(),
      })
      .execute();
  });
  return { id, serverId: serverRow.id, folder: (dataDir) => path.join(dataDir, 'volumes', `.restore-${id}`) };
}
