/**
 * Who the files the service writes into a volume belong to (docs/reference/containment.md, docs/reference/files-and-sftp.md):
 * the server's uid when it runs confined, so that its process can change
 * them; the service's own user (nothing done) otherwise. Always through a
 * descriptor the caller opened with O_NOFOLLOW, never by path.
 */
import fs from 'node:fs';

/** The uid and gid a server's files belong to; undefined = the service's own user. */
export type Owner = { readonly uid: number; readonly gid: number } | undefined;

/** Files made by the service: 0644 (an SFTP client's mode & 0o777 when it gives one). */
export const NEW_FILE_MODE = 0o644;
/** Folders made by the service. */
export const NEW_FOLDER_MODE = 0o755;

export function giveToOwner(fd: number, owner: Owner): void {
  if (owner !== undefined) fs.fchownSync(fd, owner.uid, owner.gid);
}
