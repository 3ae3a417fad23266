/**
 * Wings' `file` parser: every line that starts with a replacement's key is
 * replaced whole by its value (the first replacement that matches a line
 * wins; Wings writes every matching one's value, glued together). Lines keep
 * their endings; a missing or empty file stays empty. `if_value` is ignored,
 * as Wings ignores it here.
 */
import type { Replacement } from './replacements.js';

export function editTextFile(text: string, replacements: readonly Replacement[]): string {
  if (text === '') return text;
  const lines = text.split('\n');
  return lines
    .map((line, index) => {
      // The piece after the last newline is no line of its own when the file ends with one.
      if (index === lines.length - 1 && line === '') return line;
      const cr = line.endsWith('\r') ? '\r' : '';
      const content = cr ? line.slice(0, -1) : line;
      const replacement = replacements.find((r) => r.match !== '' && content.startsWith(r.match));
      return replacement ? `${replacement.value}${cr}` : line;
    })
    .join('\n');
}
