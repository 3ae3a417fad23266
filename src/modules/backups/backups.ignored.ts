import { ValidationError } from '../../http/errors.js';

/**
 * The bounds on a backup's `ignored` patterns (docs/reference/backups-and-restores.md#durability, bounded work): every
 * file of the volume is matched against each pattern, so their number and
 * size are what a backup's matching costs.
 */
const IGNORED_MAX_BYTES = 64 * 1024;
const IGNORED_MAX_PATTERNS = 1_000;

/** The newline-separated patterns of `text` (`ignored`, or a backup task's payload); blank lines dropped. */
export function ignoredPatterns(text: string | undefined): string[] {
  if (text === undefined) return [];
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '');
}

/** `text` when it is within the bounds; a 422 on `field` otherwise. */
export function checkIgnored<T extends string | undefined>(text: T, field: string): T {
  if (text === undefined) return text;
  const name = field.replace(/_/g, ' ');
  if (Buffer.byteLength(text, 'utf8') > IGNORED_MAX_BYTES) {
    throw ValidationError.of(field, 'max', `The ${name} field must not be greater than ${IGNORED_MAX_BYTES} bytes.`);
  }
  if (ignoredPatterns(text).length > IGNORED_MAX_PATTERNS) {
    throw ValidationError.of(field, 'max', `The ${name} field must not list more than ${IGNORED_MAX_PATTERNS} patterns.`);
  }
  return text;
}
