/**
 * An egg's `config.files` entry as Wings receives it (docs/reference/eggs-and-installs.md): the panel
 * turns each `find` key into a replacement; a value that is an object
 * (`{ "<if value>": "<replace with>" }`) becomes one conditional replacement
 * per entry, as Pterodactyl's panel does.
 */
import type { ConfigFileEdit } from '../../daemon.js';

export interface Replacement {
  /** The key: a properties key, a dotted path (yaml, json, xml), `section.key` (ini), a line's start (file). */
  readonly match: string;
  /** Only replace a value that is this now (`regex:<expression>`: replace what it matches); absent = always. */
  readonly ifValue?: string;
  /** The value, filled in by the panel. */
  readonly value: string;
}

export function replacementsOf(find: ConfigFileEdit['find']): Replacement[] {
  const replacements: Replacement[] = [];
  for (const [match, value] of Object.entries(find)) {
    if (typeof value === 'string') {
      replacements.push({ match, value });
      continue;
    }
    for (const [ifValue, replaceWith] of Object.entries(value)) replacements.push({ match, ifValue, value: String(replaceWith) });
  }
  return replacements;
}

/**
 * A value as yaml and json files get it: a whole number becomes a number (as
 * Wings does), `true` and `false` booleans (Wings does that for values the
 * egg wrote as JSON booleans, which the panel hands over as strings here);
 * anything else stays a string.
 */
export function typedValue(value: string): string | number | boolean {
  if (/^[+-]?\d+$/.test(value)) {
    const number = Number(value);
    if (Number.isSafeInteger(number)) return number;
  }
  if (value === 'true') return true;
  if (value === 'false') return false;
  return value;
}

/** What a conditional replacement makes of the value there now; null = leave it. Wings' `if_value`, as it is meant. */
export function conditionalValue(replacement: Replacement, current: string | undefined): string | null {
  const { ifValue } = replacement;
  if (ifValue === undefined) return replacement.value;
  if (current === undefined) return null;
  if (ifValue.startsWith('regex:')) {
    let expression: RegExp;
    try {
      expression = new RegExp(ifValue.slice('regex:'.length), 'g');
    } catch {
      return null; // Wings logs an expression that does not compile and replaces nothing
    }
    return expression.test(current) ? current.replace(expression, replacement.value) : null;
  }
  return current === ifValue ? replacement.value : null;
}
