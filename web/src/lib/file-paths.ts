/**
 * Paths inside a server's volume as the Files pages handle them: always
 * absolute from the volume's root (`/`, `/plugins/a.jar`), `/`-separated,
 * with no empty, `.` or `..` parts, so that an address (`?dir=`) and the API's
 * `root`/`file` members are the same string.
 */

/** `raw` as a clean absolute path; `..` never climbs above the root. */
export function normalisePath(raw: string): string {
  const parts: string[] = [];
  for (const part of raw.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') parts.pop();
    else parts.push(part);
  }
  return `/${parts.join('/')}`;
}

export function joinPath(directory: string, name: string): string {
  return normalisePath(`${directory}/${name}`);
}

export function parentOf(path: string): string {
  return normalisePath(`${path}/..`);
}

export function baseName(path: string): string {
  return normalisePath(path).split('/').pop() ?? '';
}

/** The folders from the root down to `directory`, each with its path: the breadcrumbs. */
export function crumbsOf(directory: string): { name: string; path: string }[] {
  const parts = normalisePath(directory).split('/').filter(Boolean);
  return parts.map((name, i) => ({ name, path: `/${parts.slice(0, i + 1).join('/')}` }));
}

/**
 * What a rename or move dialog's answer means: a plain name stays in
 * `directory`; anything with a `/` is a path, relative to `directory`
 * unless it starts with `/` (the volume's root).
 */
export function destinationOf(directory: string, answer: string): string {
  const trimmed = answer.trim();
  return trimmed.startsWith('/') ? normalisePath(trimmed) : joinPath(directory, trimmed);
}

/** A volume path as the API's `root`-relative member: no leading slash. */
export const relativeToRoot = (path: string) => normalisePath(path).slice(1);

const ARCHIVES = /\.(tar\.gz|tgz|tar|zip)$/i;

/** What `POST /files/decompress` takes (docs/reference/files-and-sftp.md). */
export const isArchive = (name: string) => ARCHIVES.test(name);

const TEXT_MIME =
  /^(text\/|inode\/x-empty$|application\/(json|xml|javascript|x-yaml|yaml|toml|x-sh|x-shellscript|x-empty|ld\+json))/;
const TEXT_EXTENSIONS =
  /\.(txt|log|md|json|ya?ml|toml|properties|cfg|conf|ini|xml|html?|css|js|mjs|cjs|ts|tsx|jsx|sh|bash|env|lua|py|csv|sk|mcmeta|lang)$/i;

/** Whether a file opens in the editor when clicked (others are downloaded). */
export function isTextFile(name: string, mimetype: string): boolean {
  return TEXT_MIME.test(mimetype) || TEXT_EXTENSIONS.test(name) || !name.includes('.');
}
