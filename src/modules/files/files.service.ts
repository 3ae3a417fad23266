/**
 * The file routes' work (docs/reference/files-and-sftp.md): each change of a volume runs inside
 * changeServerVolume (refused while a backup is written or a restore runs),
 * and its activity entry is written once the daemon has done it. Files have
 * no database row of their own, so the entry is the only write: a failed
 * change records nothing.
 */
import type { Readable } from 'node:stream';
import type { Actor } from '../../actor.js';
import type { AppDeps } from '../../deps.js';
import { VolumeFileError, type DaemonServer, type VolumeEntry } from '../../daemon/daemon.js';
import type { ServerRow } from '../../db/schema.js';
import { badRequest } from '../../http/errors.js';
import { recordActivity } from '../activity/activity.recorder.js';
import { changeServerVolume } from '../backups/volume-changes.js';
import { daemonServer } from '../servers/servers.service.js';
import { mappingFileErrors } from './files.errors.js';

export type FilesDeps = Pick<AppDeps, 'db' | 'clock' | 'daemon' | 'config'>;

const MIB = 1024 * 1024;

/**
 * A path under a folder of the volume, as Wings joins `root` and a name: a
 * `..` that stays inside the volume is resolved by name (Pterodactyl's front
 * end moves a file with `../other/name`); one that would climb above the
 * volume's root is refused (400, docs/reference/files-and-sftp.md), never clamped. Links are not
 * followed here: the daemon opens what remains descriptor-relative.
 */
export function joinVolumePath(root: string | undefined, name: string): string {
  const segments: string[] = [];
  for (const segment of `${root ?? '/'}/${name}`.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      if (segments.length === 0) throw badRequest(`"${name}" leaves the server's folder ("..").`);
      segments.pop();
    } else {
      segments.push(segment);
    }
  }
  return `/${segments.join('/')}`;
}

export async function logFileEvent(
  deps: Pick<AppDeps, 'db' | 'clock'>,
  server: ServerRow,
  actor: Actor,
  event: string,
  properties: Record<string, unknown>,
): Promise<void> {
  await recordActivity(deps.db, { serverId: server.id, event, actor, properties, timestamp: deps.clock.now() });
}

/**
 * A change of the volume: `work` runs in changeServerVolume with file errors
 * mapped to HTTP, then the activity entry is written.
 */
async function change<T>(
  deps: FilesDeps,
  server: ServerRow,
  actor: Actor,
  refusal: string,
  event: { name: string; properties: (result: T) => Record<string, unknown> },
  work: () => Promise<T>,
): Promise<T> {
  const result = await changeServerVolume(deps, server.id, refusal, () => mappingFileErrors(work));
  await logFileEvent(deps, server, actor, event.name, event.properties(result));
  return result;
}

/** Whether an entry of that path is there (a link counts, followed or not). */
async function exists(deps: FilesDeps, target: DaemonServer, file: string): Promise<boolean> {
  try {
    await deps.daemon.files.stat(target, file);
    return true;
  } catch (err) {
    if (err instanceof VolumeFileError && err.kind === 'not-found') return false;
    throw err;
  }
}

export async function listFiles(deps: FilesDeps, server: ServerRow, directory: string): Promise<VolumeEntry[]> {
  return mappingFileErrors(() => deps.daemon.files.list(daemonServer(server), directory));
}

/** A file's bytes for the editor: at most FILE_EDIT_MAX_MB (a 400 over it). */
export async function readFileContents(deps: FilesDeps, server: ServerRow, actor: Actor, file: string): Promise<Buffer> {
  const maxBytes = Math.floor(deps.config.fileEditMaxMb * MIB);
  const content = await mappingFileErrors(() => deps.daemon.files.readFile(daemonServer(server), file, maxBytes));
  await logFileEvent(deps, server, actor, 'server:file.read', { file });
  return content;
}

/** Creates or replaces `file` with `content` (a stream: counted against the disk limit as it arrives). */
export async function writeFileContents(
  deps: FilesDeps,
  server: ServerRow,
  actor: Actor,
  file: string,
  content: Readable | Buffer,
  expectedBytes?: number,
): Promise<VolumeEntry> {
  return change(
    deps,
    server,
    actor,
    'the file was not written',
    { name: 'server:file.write', properties: () => ({ file }) },
    () => deps.daemon.files.writeFile(daemonServer(server), file, content, expectedBytes !== undefined ? { expectedBytes } : {}),
  );
}

export async function createFolder(deps: FilesDeps, server: ServerRow, actor: Actor, root: string | undefined, name: string) {
  const directory = root ?? '/';
  await change(
    deps,
    server,
    actor,
    'the folder was not created',
    { name: 'server:file.create-directory', properties: () => ({ directory, name }) },
    () => deps.daemon.files.createFolder(daemonServer(server), joinVolumePath(directory, name)),
  );
}

/**
 * Renames (moves) each `from` to its `to`, both under `root`. The daemon checks
 * every path; a refusal of one stops the rest, and those done stay done, as
 * Wings (its answer names the one refused).
 */
export async function renameFiles(
  deps: FilesDeps,
  server: ServerRow,
  actor: Actor,
  root: string | undefined,
  files: readonly { from: string; to: string }[],
) {
  const directory = root ?? '/';
  // Every path is checked before anything moves.
  const moves = files.map(({ from, to }) => ({ from: joinVolumePath(directory, from), to: joinVolumePath(directory, to) }));
  await change(
    deps,
    server,
    actor,
    'no files were renamed',
    { name: 'server:file.rename', properties: () => ({ directory, files: files.map(({ from, to }) => ({ from, to })) }) },
    async () => {
      const target = daemonServer(server);
      // Each source is there and each destination free before the first move, so a refusal moves nothing.
      const destinations = new Set<string>();
      for (const { from, to } of moves) {
        await deps.daemon.files.stat(target, from);
        if (destinations.has(to) || (await exists(deps, target, to))) {
          throw new VolumeFileError('exists', `"${to}" already exists.`);
        }
        destinations.add(to);
      }
      for (const { from, to } of moves) await deps.daemon.files.rename(target, from, to);
    },
  );
}

export async function copyFile(deps: FilesDeps, server: ServerRow, actor: Actor, location: string): Promise<string> {
  return change(
    deps,
    server,
    actor,
    'the file was not copied',
    { name: 'server:file.copy', properties: () => ({ file: location }) },
    () => deps.daemon.files.copy(daemonServer(server), location),
  );
}

export async function deleteFiles(
  deps: FilesDeps,
  server: ServerRow,
  actor: Actor,
  root: string | undefined,
  files: readonly string[],
) {
  const directory = root ?? '/';
  // Without the leading `/`: the delete path (shared with delete_files tasks) takes volume-relative names.
  const paths = files.map((name) => joinVolumePath(directory, name).slice(1));
  await change(
    deps,
    server,
    actor,
    'no files were deleted',
    { name: 'server:file.delete', properties: () => ({ directory, files: [...files] }) },
    () => deps.daemon.files.delete(daemonServer(server), paths),
  );
}

export async function chmodFiles(
  deps: FilesDeps,
  server: ServerRow,
  actor: Actor,
  root: string | undefined,
  files: readonly { file: string; mode: number }[],
) {
  const directory = root ?? '/';
  const changes = files.map(({ file, mode }) => ({ path: joinVolumePath(directory, file), mode }));
  await change(
    deps,
    server,
    actor,
    'no permissions were changed',
    {
      name: 'server:file.chmod',
      properties: () => ({
        directory,
        files: files.map(({ file, mode }) => ({ file, mode: mode.toString(8).padStart(3, '0') })),
      }),
    },
    async () => {
      const target = daemonServer(server);
      // Every file is there before the first change, so a missing one changes nothing.
      for (const { path } of changes) await deps.daemon.files.stat(target, path);
      for (const { path, mode } of changes) await deps.daemon.files.chmod(target, path, mode);
    },
  );
}

export async function compressFiles(
  deps: FilesDeps,
  server: ServerRow,
  actor: Actor,
  root: string | undefined,
  files: readonly string[],
): Promise<VolumeEntry> {
  const directory = root ?? '/';
  const { entry } = await change(
    deps,
    server,
    actor,
    'no archive was made',
    { name: 'server:file.compress', properties: (made) => ({ directory, files: [...files], archive: made.path }) },
    () => deps.daemon.files.compress(daemonServer(server), directory, files),
  );
  return entry;
}

export async function decompressFile(deps: FilesDeps, server: ServerRow, actor: Actor, root: string | undefined, file: string) {
  const directory = root ?? '/';
  await change(
    deps,
    server,
    actor,
    'nothing was unpacked',
    { name: 'server:file.decompress', properties: () => ({ directory, files: file }) },
    () => deps.daemon.files.decompress(daemonServer(server), directory, joinVolumePath(directory, file)),
  );
}
