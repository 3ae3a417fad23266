import { describe, expect, it } from 'vitest';
import {
  parseRules,
  phpPatternToRegExp,
  splitRules,
  validateVariableValue,
  VariableRulesError,
} from '../../src/modules/eggs/variable-rules.js';

const check = (rules: string, value: string) => validateVariableValue(rules, value, 'Server Jar File variable');

describe('Laravel rules on egg variables', () => {
  it('required refuses an empty or blank value and stops there', () => {
    expect(check('required|string|max:20', '')).toBe('The Server Jar File variable field is required.');
    expect(check('required|integer', '   ')).toBe('The Server Jar File variable field is required.');
    expect(check('required|string', 'x')).toBeNull();
  });

  it('nullable lets an empty value pass every other rule; without it the rules judge null', () => {
    expect(check('nullable|string|min:3|regex:/^a+$/', '')).toBeNull();
    expect(check('string|max:20', '')).toBe('The Server Jar File variable must be a string.');
    expect(check('max:20', '')).toBeNull();
    expect(check('min:1', '')).toBe('The Server Jar File variable must be at least 1 characters.');
    expect(check('', '')).toBeNull();
  });

  it('string, integer, numeric, boolean', () => {
    expect(check('string', 'anything')).toBeNull();
    expect(check('integer', '42')).toBeNull();
    expect(check('integer', '-7')).toBeNull();
    expect(check('integer', '4.2')).toBe('The Server Jar File variable must be an integer.');
    expect(check('integer', '042')).toBe('The Server Jar File variable must be an integer.');
    expect(check('integer', '9223372036854775808')).toBe('The Server Jar File variable must be an integer.');
    expect(check('int', '12')).toBeNull();
    expect(check('numeric', '4.2e3')).toBeNull();
    expect(check('numeric', '.5')).toBeNull();
    expect(check('numeric', '0x1A')).toBe('The Server Jar File variable must be a number.');
    for (const ok of ['0', '1', 'true', 'false']) expect(check('boolean', ok)).toBeNull();
    expect(check('boolean', 'yes')).toBe('The Server Jar File variable field must be true or false.');
  });

  it('in: compares as PHP does, with quoted parameters', () => {
    expect(check('in:vanilla,oxide,carbon', 'oxide')).toBeNull();
    expect(check('in:vanilla,oxide,carbon', 'Oxide')).toBe('The selected Server Jar File variable is invalid.');
    expect(check('in:1,2', '1.0')).toBeNull();
    expect(check('in:"a,b",c', 'a,b')).toBeNull();
  });

  it('between, min, max, size: the number under numeric/integer, else the length', () => {
    expect(check('integer|between:1025,65535', '25565')).toBeNull();
    expect(check('integer|between:1025,65535', '80')).toBe('The Server Jar File variable must be between 1025 and 65535.');
    expect(check('string|between:3,15', 'ab')).toBe('The Server Jar File variable must be between 3 and 15 characters.');
    expect(check('string|between:3,15', '80000')).toBeNull();
    expect(check('numeric|min:10', '9.5')).toBe('The Server Jar File variable must be at least 10.');
    expect(check('string|min:2', 'é')).toBe('The Server Jar File variable must be at least 2 characters.');
    expect(check('string|max:9', '1234567890')).toBe('The Server Jar File variable may not be greater than 9 characters.');
    expect(check('integer|max:128', '129')).toBe('The Server Jar File variable may not be greater than 128.');
    expect(check('integer|max:128', '128')).toBeNull();
    expect(check('string|size:3', 'abc')).toBeNull();
    expect(check('alpha_num|size:32', 'abc')).toBe('The Server Jar File variable must be 32 characters.');
  });

  it('digits_between, alpha_num, alpha_dash, url', () => {
    expect(check('numeric|digits_between:1,6', '27015')).toBeNull();
    expect(check('numeric|digits_between:1,6', '1234567')).toBe('The Server Jar File variable must be between 1 and 6 digits.');
    expect(check('alpha_num', 'abc123')).toBeNull();
    expect(check('alpha_num', 'abc-123')).toBe('The Server Jar File variable may only contain letters and numbers.');
    expect(check('alpha_dash', 'abc-1_2')).toBeNull();
    expect(check('alpha_dash', 'a b')).toBe('The Server Jar File variable may only contain letters, numbers, and dashes.');
    expect(check('nullable|url', 'https://example.com/x.zip')).toBeNull();
    expect(check('nullable|url', 'not a url')).toBe('The Server Jar File variable format is invalid.');
  });

  it('regex: PHP delimiters and flags, a pipe inside the pattern', () => {
    expect(check('required|regex:/^([\\w\\d._-]+)(\\.jar)$/', 'server.jar')).toBeNull();
    expect(check('required|regex:/^([\\w\\d._-]+)(\\.jar)$/', 'server.zip')).toBe(
      'The Server Jar File variable format is invalid.',
    );
    expect(check('required|regex:/^([\\w\\d._-]+)(\\.jar)$/', 'a.jar; rm -rf /')).not.toBeNull();
    expect(splitRules('required|regex:/^(latest|[0-9.]+)$/|max:10')).toEqual([
      'required',
      'regex:/^(latest|[0-9.]+)$/',
      'max:10',
    ]);
    expect(check('required|regex:/^(latest|[0-9.]+)$/|max:10', 'latest')).toBeNull();
    expect(check('required|regex:/^(latest|[0-9.]+)$/|max:10', '1.20.4')).toBeNull();
    expect(check('required|regex:/^(latest|[0-9.]+)$/|max:10', 'nightly')).not.toBeNull();
    expect(check('required|regex:/^(latest|[0-9.]+)$/|max:3', '1.20.4')).toBe(
      'The Server Jar File variable may not be greater than 3 characters.',
    );
    expect(check('regex:#^a/b$#i', 'A/B')).toBeNull();
    expect(check('regex:{^x$}', 'x')).toBeNull();
    expect(phpPatternToRegExp('/\\Aab\\z/').test('ab')).toBe(true);
    expect(phpPatternToRegExp('/\\Aab\\z/').test('xab')).toBe(false);
    expect(phpPatternToRegExp('/^[[:digit:]]+$/').test('123')).toBe(true);
    // PHP's `$` would accept a final newline; JavaScript's refuses it (the safe side).
    expect(check('regex:/^\\w+$/', 'abc\n')).not.toBeNull();
  });

  it('refuses unknown rules, bad parameters and patterns JavaScript cannot run', () => {
    expect(() => parseRules('required|exists:users,id')).toThrow(VariableRulesError);
    expect(() => parseRules('between:1')).toThrow(/between rule needs 2 parameters/);
    expect(() => parseRules('max:ten')).toThrow(/numeric parameters/);
    expect(() => parseRules('string:yes')).toThrow(/takes no parameters/);
    expect(() => parseRules('regex:abc')).toThrow(/not a delimited PHP pattern/);
    expect(() => parseRules('regex:/a++/')).toThrow(VariableRulesError);
    expect(() => parseRules('regex:/(?>a)/')).toThrow(VariableRulesError);
    expect(() => parseRules('regex:/a/x')).toThrow(/modifier "x"/);
    expect(() => parseRules('regex:/(a/')).toThrow(/invalid/);
    expect(parseRules('Required|AlphaNum').map((r) => r.name)).toEqual(['required', 'alpha_num']);
  });
});
