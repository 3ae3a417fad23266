/**
 * SERVER_UID_RANGE (docs/reference/containment.md: a uid per server): read from the environment,
 * and how a server's uid slot maps into it.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../../src/config.js';
import { serverUid, UidRangeExhaustedError } from '../../../../src/daemon/local/container/container-runtime.js';

describe('SERVER_UID_RANGE', () => {
  it('defaults to 200000-299999; takes FIRST-LAST or off; refuses anything else, and 0', () => {
    expect(loadConfig({}).serverUidRange).toEqual({ first: 200_000, last: 299_999 });
    expect(loadConfig({ SERVER_UID_RANGE: '5000-5009' }).serverUidRange).toEqual({ first: 5000, last: 5009 });
    expect(loadConfig({ SERVER_UID_RANGE: '7-7' }).serverUidRange).toEqual({ first: 7, last: 7 });
    expect(loadConfig({ SERVER_UID_RANGE: 'off' }).serverUidRange).toBeNull();
    for (const bad of ['0-10', '10-5', '5000', '-5', 'a-b', '1-2147483647', '5000-6000-7000', '1.5-3']) {
      expect(() => loadConfig({ SERVER_UID_RANGE: bad }), bad).toThrow(ConfigError);
    }
    expect(loadConfig({}).serverUid).toBe(988);
  });

  it('maps a slot to FIRST + slot; no slot or no range means SERVER_UID; past the end is refused', () => {
    const runtime = { uid: 988, uidRange: { first: 200_000, last: 200_009 } };
    expect(serverUid(runtime, 0)).toBe(200_000);
    expect(serverUid(runtime, 9)).toBe(200_009);
    expect(serverUid(runtime, null)).toBe(988);
    expect(serverUid(runtime, undefined)).toBe(988);
    expect(serverUid({ uid: 988, uidRange: null }, 3)).toBe(988);
    expect(() => serverUid(runtime, 10)).toThrow(UidRangeExhaustedError);
    expect(() => serverUid(runtime, -1)).toThrow(UidRangeExhaustedError);
  });
});
