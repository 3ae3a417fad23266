import { ValidationError } from '../../http/errors.js';

/**
 * Checks a startup variable's new value against the variable's Laravel rules
 * (SPEC 16's subset) and throws the 422 Pterodactyl answers, on `value`.
 * Placeholder until the eggs module's variable-rules.ts lands.
 */
export function assertVariableValue(rules: string, value: string | null): void {
  const list = rules.split('|').filter((rule) => rule !== '');
  const nullable = list.includes('nullable');
  if (value === null || value === '') {
    if (list.includes('required')) throw ValidationError.of('value', 'required', 'The value field is required.');
    if (nullable || !list.includes('required')) return;
  }
  const text = value ?? '';
  const numeric = list.includes('integer') || list.includes('numeric');
  for (const rule of list) {
    const [name, argument = ''] = rule.split(/:(.*)/s) as [string, string?];
    switch (name) {
      case 'integer':
        if (!/^[+-]?\d+$/.test(text)) throw ValidationError.of('value', 'integer', 'The value field must be an integer.');
        break;
      case 'numeric':
        if (text.trim() === '' || Number.isNaN(Number(text)))
          throw ValidationError.of('value', 'numeric', 'The value field must be a number.');
        break;
      case 'boolean':
        if (!['0', '1', 'true', 'false'].includes(text))
          throw ValidationError.of('value', 'boolean', 'The value field must be true or false.');
        break;
      case 'in':
        if (!argument.split(',').includes(text)) throw ValidationError.of('value', 'in', 'The selected value is invalid.');
        break;
      case 'max': {
        const limit = Number(argument);
        if (numeric ? Number(text) > limit : [...text].length > limit)
          throw ValidationError.of(
            'value',
            'max',
            `The value field must not be greater than ${argument}${numeric ? '' : ' characters'}.`,
          );
        break;
      }
      case 'min': {
        const limit = Number(argument);
        if (numeric ? Number(text) < limit : [...text].length < limit)
          throw ValidationError.of(
            'value',
            'min',
            `The value field must be at least ${argument}${numeric ? '' : ' characters'}.`,
          );
        break;
      }
      case 'between': {
        const [low = 0, high = 0] = argument.split(',').map(Number);
        const size = numeric ? Number(text) : [...text].length;
        if (size < low || size > high)
          throw ValidationError.of(
            'value',
            'between',
            `The value field must be between ${low} and ${high}${numeric ? '' : ' characters'}.`,
          );
        break;
      }
      case 'regex': {
        const match = /^\/(.*)\/([a-z]*)$/s.exec(argument);
        let pattern: RegExp | undefined;
        try {
          pattern = match ? new RegExp(match[1] ?? '', (match[2] ?? '').replace(/[^imsu]/g, '')) : undefined;
        } catch {
          pattern = undefined;
        }
        if (!pattern || !pattern.test(text)) throw ValidationError.of('value', 'regex', 'The value field format is invalid.');
        break;
      }
      default:
        break;
    }
  }
}
