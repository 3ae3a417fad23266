/**
 * The names of copies, as Pterodactyl (Wings) gives them: `<base> copy<ext>`,
 * then `<base> copy 1<ext>`, `<base> copy 2<ext>`... where `<ext>` is the last
 * extension (`.tar.gz` kept whole) and a name that is all extension
 * (`.bashrc`) has none.
 */
import path from 'node:path';

function splitExtension(name: string): { base: string; extension: string } {
  if (name.toLowerCase().endsWith('.tar.gz') && name.length > '.tar.gz'.length) {
    return { base: name.slice(0, -'.tar.gz'.length), extension: name.slice(-'.tar.gz'.length) };
  }
  const extension = path.extname(name);
  return { base: name.slice(0, name.length - extension.length), extension };
}

/** The n-th candidate name for a copy of `name` (n = 0: `<base> copy<ext>`). */
export function copyName(name: string, n: number): string {
  const { base, extension } = splitExtension(name);
  return n === 0 ? `${base} copy${extension}` : `${base} copy ${n}${extension}`;
}
