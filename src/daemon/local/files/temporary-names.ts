/**
 * The temporary files a write leaves beside its target while it runs
 * (`.quetzal-upload-<24 hex>.tmp`): hidden, recognisable, unique.
 *
 * Decision (docs/reference/files-and-sftp.md left it open): a SIGKILL mid-write leaves the old file
 * (or none) at the target, plus at most one such temporary file. They are not
 * swept by a walk of every volume at start (a volume may hold 100,000 files);
 * instead a listing removes those it meets whose last change is older than
 * the start of this service: no write of this instance can own them. One of
 * a running write is younger than the start, so it is listed, never removed.
 */
import { randomBytes } from 'node:crypto';
import type fs from 'node:fs';

const TEMPORARY = /^\.quetzal-upload-[0-9a-f]{24}\.tmp$/;

export function temporaryName(): string {
  return `.quetzal-upload-${randomBytes(12).toString('hex')}.tmp`;
}

export function isTemporaryName(name: string): boolean {
  return TEMPORARY.test(name);
}

/** A regular file with a temporary's name, last changed before `staleBefore` (ms since the epoch). */
export function isStaleTemporary(name: string, stat: fs.Stats, staleBefore: number): boolean {
  return stat.isFile() && isTemporaryName(name) && stat.mtimeMs < staleBefore;
}
