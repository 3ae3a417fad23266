/**
 * chmod's `mode` (docs/reference/files-and-sftp.md): octal digits as a string (`"755"`) or as the
 * number Pterodactyl's front end sends (755), read as octal. Permission bits
 * only: setuid, setgid and the sticky bit (a fourth digit) are refused, so a
 * file on a volume can never run as its owner for someone else.
 */
import { ValidationError } from '../../http/errors.js';

/** The permission bits of `mode` (at most 0o777), or a 422 naming `field`. */
export function parseMode(mode: string | number, field: string): number {
  const digits = typeof mode === 'number' ? String(mode) : mode.trim();
  if (!/^[0-7]{1,4}$/.test(digits)) {
    throw ValidationError.of(field, 'regex', `The ${field} field must be octal permission digits, such as 644.`);
  }
  const bits = parseInt(digits, 8);
  if (bits > 0o777) {
    throw ValidationError.of(field, 'max', `The ${field} field must not set the setuid, setgid or sticky bit.`);
  }
  return bits;
}
