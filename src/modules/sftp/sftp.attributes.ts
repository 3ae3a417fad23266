/**
 * How a volume entry reads over SFTP: its attributes (seconds, st_mode) and
 * the `ls -l` line OpenSSH's client prints for `ls -l`.
 */
import type { Attributes } from 'ssh2';
import type { VolumeEntry } from '../../daemon/daemon.js';

/** Owner and group as SFTP shows them: the server's files all belong to the one user it runs as. */
const OWNER = 'container';

export function attributesOf(entry: VolumeEntry): Attributes {
  return {
    mode: entry.mode,
    uid: 0,
    gid: 0,
    size: entry.size,
    atime: Math.floor(entry.modifiedAt.getTime() / 1000),
    mtime: Math.floor(entry.modifiedAt.getTime() / 1000),
  };
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `-rw-r--r-- 1 container container 1234 Nov 26 10:35 name` */
export function longnameOf(entry: VolumeEntry): string {
  const type = entry.isDirectory ? 'd' : entry.isSymlink ? 'l' : '-';
  let bits = '';
  for (let shift = 6; shift >= 0; shift -= 3) {
    const triad = (entry.mode >> shift) & 7;
    bits += `${triad & 4 ? 'r' : '-'}${triad & 2 ? 'w' : '-'}${triad & 1 ? 'x' : '-'}`;
  }
  const m = entry.modifiedAt;
  const when = `${MONTHS[m.getUTCMonth()]} ${String(m.getUTCDate()).padStart(2)} ${String(m.getUTCHours()).padStart(2, '0')}:${String(m.getUTCMinutes()).padStart(2, '0')}`;
  return `${type}${bits} 1 ${OWNER} ${OWNER} ${String(entry.size).padStart(8)} ${when} ${entry.name}`;
}
