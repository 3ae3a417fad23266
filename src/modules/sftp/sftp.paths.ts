/**
 * SFTP paths (docs/reference/files-and-sftp.md): absolute from the volume's root `/` (a relative one
 * is taken from `/`, the session's home). REALPATH clamps `..` at the root,
 * as a chroot does, so that a client's `cd ..` stays at `/`; an operation on
 * a path whose `..` climbs above the root is refused instead, so that no
 * client can mistake `/../x` for a path outside the volume that "worked".
 * What the path names once links are followed is the files layer's business
 * (SafeDir: no path resolves outside the volume).
 */

/** The path's segments with `.` and `..` applied; null when `..` climbs above the root. */
function segmentsOf(raw: string, clamp: boolean): string[] | null {
  const out: string[] = [];
  for (const part of raw.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (out.length === 0) {
        if (clamp) continue;
        return null;
      }
      out.pop();
      continue;
    }
    out.push(part);
  }
  return out;
}

/** REALPATH's answer: the canonical absolute path, `..` above the root staying at the root. */
export function realSftpPath(raw: string): string {
  return `/${(segmentsOf(raw, true) ?? []).join('/')}`;
}

/** The volume path an operation addresses (`/a/b`); null when it would leave the root (refused). */
export function operationPath(raw: string): string | null {
  if (raw.includes('\0')) return null;
  const segments = segmentsOf(raw, false);
  return segments === null ? null : `/${segments.join('/')}`;
}
