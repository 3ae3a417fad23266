import { badRequest, ValidationError } from '../../http/errors.js';
import { parseRules, validateParsed, VariableRulesError, type ParsedRule } from '../eggs/variable-rules.js';

const SIZE_RULES: ReadonlySet<string> = new Set(['between', 'min', 'max', 'size']);
const NUMERIC_KIND: ReadonlySet<string> = new Set(['numeric', 'integer']);

/**
 * Checks a startup variable's new value against the variable's Laravel rules
 * (the eggs module's validateVariableValue) and throws the 422 Pterodactyl
 * answers: one failure on `value`, with Laravel's sentence and the rule that
 * failed (the first, in the rules' order).
 */
export function assertVariableValue(rules: string, value: string): void {
  let parsed: ParsedRule[];
  try {
    parsed = parseRules(rules);
  } catch (err) {
    // Checked at egg:import; rules written into the database by hand can still be wrong: the host's mistake, said plainly.
    if (err instanceof VariableRulesError) throw badRequest(`This variable's validation rules are invalid: ${err.message}`);
    throw err;
  }
  const detail = validateParsed(parsed, value, 'value');
  if (detail === null) return;
  throw ValidationError.of('value', failedRule(parsed, value), detail);
}

/** Which rule refused the value: each is tried alone (a size rule with the rules that make it numeric). */
function failedRule(parsed: readonly ParsedRule[], value: string): string {
  if (value.trim() === '' && parsed.some((rule) => rule.name === 'required')) return 'required';
  const numeric = parsed.filter((rule) => NUMERIC_KIND.has(rule.name));
  for (const rule of parsed) {
    if (rule.name === 'required' || rule.name === 'nullable') continue;
    const alone = SIZE_RULES.has(rule.name) ? [...numeric, rule] : [rule];
    const result = validateParsed(alone, value, 'value');
    if (result !== null && (!SIZE_RULES.has(rule.name) || validateParsed(numeric, value, 'value') === null)) return rule.name;
  }
  return parsed.find((rule) => NUMERIC_KIND.has(rule.name))?.name ?? 'required';
}
