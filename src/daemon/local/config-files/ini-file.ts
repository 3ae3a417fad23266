/**
 * Wings' `ini` parser: a key `section.key` sets `key` in `[section]`, a key
 * without a dot sets it before the first section; the split is at the first
 * dot outside brackets, brackets dropped (`[a.b].c` is key `c` of `[a.b]`),
 * as Wings splits it. A key that is not there is added at the end of its
 * section (a section that is not there, at the end of the file), written as
 * the file writes its keys (`key = value` when it has none). Comments, order
 * and spacing stay as they are. `if_value` is ignored, as Wings ignores it
 * here.
 */
import type { Replacement } from './replacements.js';

const SECTION = /^\s*\[([^\]]*)\]/;
const KEY_LINE = /^(\s*)([^=:;#[\s][^=:]*?)(\s*[=:]\s*)(.*)$/;

export function editIniFile(text: string, replacements: readonly Replacement[]): string {
  const newline = text.includes('\r\n') ? '\r\n' : '\n';
  const lines = text === '' ? [] : text.split(/\r?\n/);
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  for (const replacement of replacements) {
    const { section, key } = splitMatch(replacement.match);
    setKey(lines, section, key, replacement.value);
  }
  return lines.length === 0 ? '' : `${lines.join(newline)}${newline}`;
}

/** Wings' split: at the first dot outside brackets; brackets are dropped; later dots belong to the key. */
function splitMatch(match: string): { section: string; key: string } {
  const parts: string[] = [];
  let current = '';
  let depth = 0;
  for (const char of match) {
    if (char === '[') depth++;
    else if (char === ']') depth--;
    else if (char === '.' && depth <= 0 && parts.length === 0) {
      parts.push(current);
      current = '';
    } else current += char;
  }
  parts.push(current);
  return parts.length === 2 ? { section: parts[0]!, key: parts[1]! } : { section: '', key: parts[0]! };
}

function setKey(lines: string[], section: string, key: string, value: string): void {
  const range = sectionRange(lines, section);
  if (range === null) {
    if (lines.length > 0 && lines[lines.length - 1]!.trim() !== '') lines.push('');
    lines.push(`[${section}]`, `${key}${separatorOf(lines)}${value}`);
    return;
  }
  let lastContent = range.header;
  for (let i = range.start; i < range.end; i++) {
    const found = KEY_LINE.exec(lines[i]!);
    if (found && found[2] === key) {
      lines[i] = `${found[1]}${found[2]}${found[3]}${value}`;
      return;
    }
    if (lines[i]!.trim() !== '') lastContent = i;
  }
  // After the section's last line that is not blank: its trailing blank lines stay between it and the next.
  lines.splice(lastContent + 1, 0, `${key}${separatorOf(lines)}${value}`);
}

/** The lines of a section (after its header), or of what comes before the first one (`''`); null when there is none. */
function sectionRange(lines: readonly string[], section: string): { header: number; start: number; end: number } | null {
  let header = section === '' ? -1 : null;
  for (let i = 0; i < lines.length; i++) {
    const found = SECTION.exec(lines[i]!);
    if (!found) continue;
    if (header !== null) return { header, start: header + 1, end: i };
    if (found[1]!.trim() === section) header = i;
  }
  return header === null ? null : { header, start: header + 1, end: lines.length };
}

/** How the file writes `=`: as its first key line does; ` = ` (go-ini's way) when it has none. */
function separatorOf(lines: readonly string[]): string {
  for (const line of lines) {
    const found = SECTION.test(line) ? null : KEY_LINE.exec(line);
    if (found) return found[3]!;
  }
  return ' = ';
}
