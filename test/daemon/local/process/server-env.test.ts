/**
 * What the panel's environment adds to a server process (docs/reference/eggs-and-installs.md); the real
 * processes' view, confined or not, is in egg-runtime*.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { serverExtraEnv } from '../../../../src/daemon/local/process/server-env.js';

describe('server environment', () => {
  it("takes the panel's variables over the allocation's, never HOME, PATH, USER or P_SERVER_UUID, nor a name or value that would corrupt the environment", () => {
    const env = serverExtraEnv([{ ip: '10.0.0.1', port: 25565 }], {
      SERVER_PORT: '25600',
      SERVER_MEMORY: '1024',
      HOME: '/x',
      PATH: '/x',
      USER: 'x',
      P_SERVER_UUID: 'x',
      'A=B': 'x',
      '1ABC': 'x',
      'WITH SPACE': 'x',
      NUL: 'a\0b',
      _OK_1: 'fine',
    });
    expect(env).toEqual({ SERVER_IP: '10.0.0.1', SERVER_PORT: '25600', SERVER_MEMORY: '1024', _OK_1: 'fine' });
    expect(serverExtraEnv(undefined, undefined)).toEqual({});
  });
});
