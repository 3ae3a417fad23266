/**
 * Laravel's validation rules as egg variables use them (docs/reference/eggs-and-installs.md), with
 * Pterodactyl's English messages (resources/lang/en/validation.php).
 *
 * The subset: required, nullable, string, integer (int), numeric, boolean
 * (bool), in:, between:, min:, max:, regex:, and the ones Pterodactyl's own
 * seeder eggs and the pelican-eggs repositories also use: size:,
 * digits_between:, alpha_num, alpha_dash, url. Anything else is refused when
 * the egg is imported (parseRules throws), so a rule is never silently ignored.
 *
 * Semantics follow Laravel's Validator behind Pterodactyl's HTTP middleware:
 * - ConvertEmptyStringsToNull and TrimStrings turn an empty or blank value
 *   into null, so '' is "absent": `required` refuses it, `nullable` lets it
 *   pass with no further rule, and without `nullable` the other rules judge
 *   null (`string`, `integer`, `in:` ... refuse it; `max:` passes, `min:1`
 *   refuses: its length is 0).
 * - min/max/between/size compare the number when the rules hold `numeric` or
 *   `integer` and the value is numeric, else the length in characters.
 * - The first failing rule, in the order written, gives the message; a failed
 *   `required` stops the rest (Laravel's implicit-rule rule).
 * - Values are strings here, so `boolean` accepts '0', '1' and (a JSON
 *   boolean reaching the panel as text) 'true', 'false'.
 */

export class VariableRulesError extends Error {}

export interface ParsedRule {
  /** Lower case, Laravel's aliases resolved (int → integer, bool → boolean). */
  name: RuleName;
  params: string[];
  /** For `regex:`, the pattern translated to JavaScript. */
  regex?: RegExp;
}

const RULE_NAMES = [
  'required',
  'nullable',
  'string',
  'integer',
  'numeric',
  'boolean',
  'in',
  'between',
  'min',
  'max',
  'size',
  'digits_between',
  'regex',
  'alpha_num',
  'alpha_dash',
  'url',
] as const;
type RuleName = (typeof RULE_NAMES)[number];

/** Laravel studly-cases rule names (`alpha_num`, `AlphaNum` and `alpha-num` are one rule) and maps a few aliases. */
const RULE_BY_KEY: ReadonlyMap<string, RuleName> = new Map<string, RuleName>([
  ...RULE_NAMES.map((name): [string, RuleName] => [name.replace(/_/g, ''), name]),
  ['int', 'integer'],
  ['bool', 'boolean'],
]);

/** How many parameters each rule takes: [min, max]. */
const PARAM_COUNT: Record<RuleName, [number, number]> = {
  required: [0, 0],
  nullable: [0, 0],
  string: [0, 0],
  integer: [0, 0],
  numeric: [0, 0],
  boolean: [0, 0],
  in: [1, Infinity],
  between: [2, 2],
  min: [1, 1],
  max: [1, 1],
  size: [1, 1],
  digits_between: [2, 2],
  regex: [1, 1],
  alpha_num: [0, 0],
  alpha_dash: [0, 0],
  url: [0, 0],
};

const NUMBER_PARAM_RULES: ReadonlySet<RuleName> = new Set(['between', 'min', 'max', 'size', 'digits_between']);

/**
 * Splits Laravel's pipe-separated rule list. Laravel itself splits on every
 * `|`; a `regex:` whose pattern holds one (`regex:/^(a|b)$/`) is kept whole
 * here: the pieces after it join it until its closing delimiter ends the piece.
 */
export function splitRules(rules: string): string[] {
  const pieces = rules.split('|');
  const out: string[] = [];
  for (let i = 0; i < pieces.length; i++) {
    let piece = pieces[i]!;
    if (/^\s*regex:/i.test(piece)) {
      while (!isClosedPattern(piece.slice(piece.indexOf(':') + 1)) && i + 1 < pieces.length) {
        piece += '|' + pieces[++i]!;
      }
    }
    if (piece.trim() !== '') out.push(piece.trim());
  }
  return out;
}

/** Parses a rule list; throws VariableRulesError on an unknown rule or bad parameters (an egg import error). */
export function parseRules(rules: string): ParsedRule[] {
  return splitRules(rules).map(parseRule);
}

function parseRule(text: string): ParsedRule {
  const colon = text.indexOf(':');
  const rawName = (colon < 0 ? text : text.slice(0, colon)).trim();
  const name = RULE_BY_KEY.get(rawName.toLowerCase().replace(/[_-]/g, ''));
  if (name === undefined) throw new VariableRulesError(`unsupported validation rule "${rawName}"`);
  const rest = colon < 0 ? undefined : text.slice(colon + 1);
  if (name === 'regex') {
    if (rest === undefined || rest === '') throw new VariableRulesError('the regex rule needs a pattern');
    return { name, params: [rest], regex: phpPatternToRegExp(rest) };
  }
  const params = rest === undefined ? [] : parseCsv(rest);
  const [least, most] = PARAM_COUNT[name];
  if (params.length < least || params.length > most) {
    throw new VariableRulesError(
      least === most && least === 0
        ? `the ${name} rule takes no parameters`
        : `the ${name} rule needs ${least === most ? least : `at least ${least}`} parameter${least === 1 ? '' : 's'}`,
    );
  }
  if (NUMBER_PARAM_RULES.has(name) && params.some((p) => !isPhpNumeric(p))) {
    throw new VariableRulesError(`the ${name} rule needs numeric parameters, got "${rest}"`);
  }
  return { name, params };
}

/** PHP's str_getcsv on one line, as Laravel parses rule parameters (quotes allowed: `in:"a,b",c`). */
function parseCsv(text: string): string[] {
  const out: string[] = [];
  let field = '';
  let quoted = false;
  let wasQuoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"' && field.trim() === '' && !wasQuoted) {
      quoted = true;
      wasQuoted = true;
      field = '';
    } else if (c === ',') {
      out.push(field);
      field = '';
      wasQuoted = false;
    } else field += c;
  }
  out.push(field);
  return out;
}

const CLOSING_DELIMITER: Record<string, string> = { '(': ')', '[': ']', '{': '}', '<': '>' };

/** Whether a PHP pattern (`/body/flags`) is complete: its closing delimiter, unescaped, then only letters. */
function isClosedPattern(pattern: string): boolean {
  const delimiter = pattern[0];
  if (delimiter === undefined) return false;
  const closing = CLOSING_DELIMITER[delimiter] ?? delimiter;
  const end = pattern.lastIndexOf(closing);
  if (end < 1) return false;
  if (!/^[a-zA-Z]*$/.test(pattern.slice(end + 1))) return false;
  let backslashes = 0;
  for (let i = end - 1; i >= 1 && pattern[i] === '\\'; i--) backslashes++;
  return backslashes % 2 === 0;
}

/** POSIX bracket classes PCRE knows inside `[...]`, as JavaScript class contents. */
const POSIX_CLASSES: Record<string, string> = {
  alpha: 'a-zA-Z',
  digit: '0-9',
  alnum: 'a-zA-Z0-9',
  upper: 'A-Z',
  lower: 'a-z',
  space: ' \\t\\n\\r\\f\\v',
  blank: ' \\t',
  punct: '!-\\/:-@\\[-`{-~',
  xdigit: '0-9A-Fa-f',
  word: '\\w',
};

/**
 * A PCRE pattern in PHP's delimited form (`/^\w+$/i`) as a JavaScript RegExp.
 * Translated: the delimiters, the flags i, m, s, u (D is JavaScript's own `$`
 * already; A anchors at the start), `\A`, `\z`, `\Z`, `\h` and POSIX classes
 * (`[[:alpha:]]`). What JavaScript cannot express (possessive quantifiers,
 * atomic groups, recursion, the x and U flags) makes the RegExp constructor
 * or this function throw: the egg is refused rather than checked differently.
 * One difference stays, on the safe side: PHP's `$` also matches before a
 * final newline; JavaScript's does not, so a value ending in a newline that
 * PHP would accept is refused.
 */
export function phpPatternToRegExp(pattern: string): RegExp {
  if (!isClosedPattern(pattern) || /^[a-zA-Z0-9\\\s]/.test(pattern)) {
    throw new VariableRulesError(`the regex rule's pattern ${pattern} is not a delimited PHP pattern`);
  }
  const delimiter = pattern[0]!;
  const end = pattern.lastIndexOf(CLOSING_DELIMITER[delimiter] ?? delimiter);
  let body = pattern.slice(1, end);
  const modifiers = pattern.slice(end + 1);
  let flags = '';
  let anchored = false;
  for (const m of modifiers) {
    if ('imsu'.includes(m)) {
      if (!flags.includes(m)) flags += m;
    } else if (m === 'A') anchored = true;
    else if (m !== 'D') throw new VariableRulesError(`the regex rule's modifier "${m}" is not supported`);
  }
  if (delimiter !== '/' && !CLOSING_DELIMITER[delimiter]) {
    // An escaped delimiter (`#a\#b#`) is the plain character in PCRE.
    body = body.split('\\' + delimiter).join(/[.*+?^${}()|[\]\\/]/.test(delimiter) ? '\\' + delimiter : delimiter);
  }
  body = body
    .replace(/\[:(alpha|digit|alnum|upper|lower|space|blank|punct|xdigit|word):\]/g, (_m, name: string) => POSIX_CLASSES[name]!)
    .replace(/(?<!\\)((?:\\\\)*)\\A/g, '$1^')
    .replace(/(?<!\\)((?:\\\\)*)\\z/g, '$1$')
    .replace(/(?<!\\)((?:\\\\)*)\\Z/g, '$1(?=\\n?$)')
    .replace(/(?<!\\)((?:\\\\)*)\\h/g, '$1[ \\t]');
  if (/\(\?[>R0-9+&P]/.test(body) || /(?<!\\)(?:[*+?}])\+/.test(body)) {
    throw new VariableRulesError(`the regex rule's pattern ${pattern} uses PCRE features JavaScript lacks`);
  }
  if (anchored) body = `^(?:${body})`;
  try {
    return new RegExp(body, flags);
  } catch (error) {
    throw new VariableRulesError(`the regex rule's pattern ${pattern} is invalid: ${(error as Error).message}`);
  }
}

/** PHP's is_numeric on a string (PHP 8: leading and trailing whitespace allowed). */
export function isPhpNumeric(value: string): boolean {
  return /^[ \t\n\r\v\f]*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?[ \t\n\r\v\f]*$/.test(value);
}

const PHP_INT_MAX = 9223372036854775807n;

/** PHP's filter_var(FILTER_VALIDATE_INT): optional sign, no leading zeros, 64-bit range, surrounding blanks allowed. */
function isPhpInteger(value: string): boolean {
  const match = /^[ \t\n\r\v\f]*([+-]?)(0|[1-9][0-9]*)[ \t\n\r\v\f]*$/.exec(value);
  if (!match) return false;
  const n = BigInt(match[2]!);
  return match[1] === '-' ? n <= PHP_INT_MAX + 1n : n <= PHP_INT_MAX;
}

/** PHP 8's loose `==` between two strings (what in_array does for `in:`): numeric strings compare as numbers. */
function looselyEqual(a: string, b: string): boolean {
  if (isPhpNumeric(a) && isPhpNumeric(b)) return Number(a) === Number(b);
  return a === b;
}

function isUrl(value: string): boolean {
  // Laravel's own pattern is long; this keeps its core: a scheme, `://`, a host, no blanks.
  if (!/^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^\s/?#]+[^\s]*$/.test(value)) return false;
  try {
    return new URL(value).host !== '';
  } catch {
    return false;
  }
}

const MESSAGES = {
  required: 'The :attribute field is required.',
  string: 'The :attribute must be a string.',
  integer: 'The :attribute must be an integer.',
  numeric: 'The :attribute must be a number.',
  boolean: 'The :attribute field must be true or false.',
  in: 'The selected :attribute is invalid.',
  regex: 'The :attribute format is invalid.',
  url: 'The :attribute format is invalid.',
  alpha_num: 'The :attribute may only contain letters and numbers.',
  alpha_dash: 'The :attribute may only contain letters, numbers, and dashes.',
  digits_between: 'The :attribute must be between :min and :max digits.',
  between: {
    numeric: 'The :attribute must be between :min and :max.',
    string: 'The :attribute must be between :min and :max characters.',
  },
  min: { numeric: 'The :attribute must be at least :min.', string: 'The :attribute must be at least :min characters.' },
  max: {
    numeric: 'The :attribute may not be greater than :max.',
    string: 'The :attribute may not be greater than :max characters.',
  },
  size: { numeric: 'The :attribute must be :size.', string: 'The :attribute must be :size characters.' },
} as const;

/**
 * Laravel's verdict on one value: its English message with `attribute`
 * named in it, or null when the value passes. Throws VariableRulesError when
 * the rules themselves are invalid (they were checked at import).
 */
export function validateVariableValue(rules: string, value: string, attribute: string): string | null {
  return validateParsed(parseRules(rules), value, attribute);
}

/** validateVariableValue with the rules already parsed. */
export function validateParsed(rules: readonly ParsedRule[], value: string, attribute: string): string | null {
  const absent = value.trim() === '';
  const required = rules.some((r) => r.name === 'required');
  if (absent && required) return message('required', attribute);
  if (absent && rules.some((r) => r.name === 'nullable')) return null;
  const numericKind = rules.some((r) => r.name === 'numeric' || r.name === 'integer');
  // null once blank (ConvertEmptyStringsToNull): rules that need a string or a number refuse it.
  const text = absent ? null : value;
  for (const rule of rules) {
    const failure = check(rule, text, numericKind);
    if (failure !== null) return message(failure, attribute, rule, numericKind);
  }
  return null;
}

type MessageKey = keyof typeof MESSAGES;

/** The message key of the rule's failure, or null when it passes. */
function check(rule: ParsedRule, value: string | null, numericKind: boolean): MessageKey | null {
  const size = (): number => (value === null ? 0 : numericKind && isPhpNumeric(value) ? Number(value.trim()) : [...value].length);
  const fails = (ok: boolean): MessageKey | null => (ok ? null : (rule.name as MessageKey));
  const p = rule.params.map(Number);
  switch (rule.name) {
    case 'required':
    case 'nullable':
      return null;
    case 'string':
      return fails(value !== null);
    case 'integer':
      return fails(value !== null && isPhpInteger(value));
    case 'numeric':
      return fails(value !== null && isPhpNumeric(value));
    case 'boolean':
      return fails(value !== null && ['0', '1', 'true', 'false'].includes(value));
    case 'in':
      return fails(rule.params.some((allowed) => looselyEqual(value ?? '', allowed)));
    case 'between':
      return fails(size() >= p[0]! && size() <= p[1]!);
    case 'min':
      return fails(size() >= p[0]!);
    case 'max':
      return fails(size() <= p[0]!);
    case 'size':
      return fails(size() === p[0]!);
    case 'digits_between': {
      const digits = value ?? '';
      return fails(/^[0-9]*$/.test(digits) && digits.length >= p[0]! && digits.length <= p[1]!);
    }
    case 'regex':
      return fails(value !== null && rule.regex!.test(value));
    case 'alpha_num':
      return fails(value !== null && /^[\p{L}\p{M}\p{N}]+$/u.test(value));
    case 'alpha_dash':
      return fails(value !== null && /^[\p{L}\p{M}\p{N}_-]+$/u.test(value));
    case 'url':
      return fails(value !== null && isUrl(value));
  }
}

function message(key: MessageKey, attribute: string, rule?: ParsedRule, numericKind = false): string {
  const template = MESSAGES[key];
  let text: string = typeof template === 'string' ? template : template[numericKind ? 'numeric' : 'string'];
  text = text.replace(':attribute', attribute);
  if (rule && (key === 'between' || key === 'digits_between')) {
    text = text.replace(':min', rule.params[0]!).replace(':max', rule.params[1]!);
  } else if (rule && (key === 'min' || key === 'max' || key === 'size')) {
    text = text.replace(`:${key}`, rule.params[0]!);
  }
  return text;
}
