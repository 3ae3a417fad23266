/**
 * Wings' `properties` parser (Java .properties, e.g. Minecraft's
 * server.properties): each replacement sets its key's value (every line of
 * that key); a key that is not there is appended as `key=value`. Values are
 * written escaped as Wings writes them: non-ASCII characters as `\uXXXX`.
 * Comments, blank lines, order and the other lines stay as they are (Wings
 * rewrites the file and keeps only the comments at its head).
 */
import { conditionalValue, type Replacement } from './replacements.js';

interface Entry {
  /** Index of the entry's first physical line. */
  readonly first: number;
  /** Index of its last (continuation) line. */
  readonly last: number;
  readonly key: string;
  /** The first line up to where the value begins (key and separator as written). */
  readonly prefix: string;
  readonly value: string;
}

export function editPropertiesFile(text: string, replacements: readonly Replacement[]): string {
  const newline = text.includes('\r\n') ? '\r\n' : '\n';
  const lines = text === '' ? [] : text.split(/\r?\n/);
  const endsWithNewline = lines.length > 0 && lines[lines.length - 1] === '';
  if (endsWithNewline) lines.pop();
  for (const replacement of replacements) {
    const entries = parseEntries(lines).filter((entry) => entry.key === replacement.match);
    if (entries.length === 0) {
      if (replacement.ifValue === undefined) lines.push(`${escapeKey(replacement.match)}=${escapeValue(replacement.value)}`);
      continue;
    }
    // From the last: replacing an entry's continuation lines shifts the ones after it.
    for (const entry of entries.reverse()) {
      const next = conditionalValue(replacement, entry.value);
      if (next === null) continue;
      lines.splice(entry.first, entry.last - entry.first + 1, `${entry.prefix}${escapeValue(next)}`);
    }
  }
  return lines.length === 0 ? '' : `${lines.join(newline)}${newline}`;
}

function parseEntries(lines: readonly string[]): Entry[] {
  const entries: Entry[] = [];
  for (let i = 0; i < lines.length; i++) {
    const first = i;
    let logical = lines[i]!.replace(/^[ \t\f]+/, '');
    if (logical === '' || logical.startsWith('#') || logical.startsWith('!')) continue;
    // A line ending in an odd number of backslashes goes on on the next one (its leading blanks dropped).
    while (/(^|[^\\])(\\\\)*\\$/.test(logical) && i + 1 < lines.length) {
      logical = logical.slice(0, -1) + lines[++i]!.replace(/^[ \t\f]+/, '');
    }
    const { key, valueStart } = splitKey(logical);
    const indent = lines[first]!.length - lines[first]!.replace(/^[ \t\f]+/, '').length;
    // A key alone on its line has no separator to keep: it gets `=`.
    const prefix = lines[first]!.slice(0, indent + valueStart) + (valueStart === key.length ? '=' : '');
    entries.push({ first, last: i, key: unescape(key), prefix, value: unescape(logical.slice(valueStart)) });
  }
  return entries;
}

/** The key (up to an unescaped `=`, `:` or blank) and where the value begins (after the separator and blanks). */
function splitKey(line: string): { key: string; valueStart: number } {
  let end = 0;
  while (end < line.length && !/[=: \t\f]/.test(line[end]!)) end += line[end] === '\\' ? 2 : 1;
  end = Math.min(end, line.length);
  let start = end;
  while (start < line.length && /[ \t\f]/.test(line[start]!)) start++;
  if (start < line.length && /[=:]/.test(line[start]!)) start++;
  while (start < line.length && /[ \t\f]/.test(line[start]!)) start++;
  return { key: line.slice(0, end), valueStart: start };
}

const UNESCAPES: Readonly<Record<string, string>> = { t: '\t', n: '\n', r: '\r', f: '\f' };

function unescape(text: string): string {
  return text.replace(/\\(u[0-9a-fA-F]{4}|.)/g, (_all, code: string) =>
    code.length === 5 ? String.fromCharCode(parseInt(code.slice(1), 16)) : (UNESCAPES[code] ?? code),
  );
}

/** As Wings writes values (Go's QuoteToASCII, unquoted): backslashes and control characters escaped, non-ASCII as \uXXXX. */
function escapeValue(value: string): string {
  let out = '';
  for (const char of value) {
    const code = char.charCodeAt(0);
    if (char === '\\') out += '\\\\';
    else if (char === '\n') out += '\\n';
    else if (char === '\r') out += '\\r';
    else if (char === '\t') out += '\\t';
    else if (char === '\f') out += '\\f';
    else if (code < 0x20 || code > 0x7e)
      for (let i = 0; i < char.length; i++) out += `\\u${char.charCodeAt(i).toString(16).padStart(4, '0')}`;
    else out += char;
  }
  // A leading blank would be read as part of the separator.
  return out.replace(/^ /, '\\ ');
}

function escapeKey(key: string): string {
  return escapeValue(key).replace(/[=: ]/g, (char) => `\\${char}`);
}
