/**
 * Done lines matched as Wings matches them (docs/reference/eggs-and-installs.md): a plain string anywhere
 * in the line, `regex:` a regular expression, an expression that does not
 * compile looked for as written. The state machine around them runs against
 * real processes in egg-runtime.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { doneLineMatcher } from '../../../../src/daemon/local/process/done-lines.js';
import { stopRequest } from '../../../../src/daemon/local/process/stop-request.js';

describe('done lines', () => {
  it('none (absent, empty, or only empty strings) means running at once', () => {
    expect(doneLineMatcher(undefined)).toBeNull();
    expect(doneLineMatcher([])).toBeNull();
    expect(doneLineMatcher([''])).toBeNull();
  });

  it('a plain string matches anywhere in the line, case and all', () => {
    const matches = doneLineMatcher([')! For help, type ', 'Server started'])!;
    expect(matches('[12:00:01] [Server thread/INFO]: Done (3.2s)! For help, type "help"')).toBe(true);
    expect(matches('Server started.')).toBe(true);
    expect(matches('server started')).toBe(false);
    expect(matches('Starting minecraft server version 1.20.4')).toBe(false);
  });

  it('regex: is a regular expression searched in the line; one that does not compile is plain text', () => {
    const matches = doneLineMatcher(['regex:^Done \\(\\d+\\.\\d+s\\)!'])!;
    expect(matches('Done (1.52s)! For help')).toBe(true);
    expect(matches('[INFO] Done (1.52s)!')).toBe(false);
    const broken = doneLineMatcher(['regex:(unclosed'])!;
    expect(broken('a line with (unclosed in it')).toBe(false);
    expect(broken('a line with regex:(unclosed in it')).toBe(true);
  });
});

describe('stop requests', () => {
  it('^C is SIGINT, ^<signal> that signal, an unknown one SIGKILL (as Wings), anything else a console line', () => {
    expect(stopRequest(null)).toEqual({ signal: 'SIGTERM' });
    expect(stopRequest('^C')).toEqual({ signal: 'SIGINT' });
    expect(stopRequest(' ^c ')).toEqual({ signal: 'SIGINT' });
    expect(stopRequest('^SIGTERM')).toEqual({ signal: 'SIGTERM' });
    expect(stopRequest('^TERM')).toEqual({ signal: 'SIGTERM' });
    expect(stopRequest('^SIGABRT')).toEqual({ signal: 'SIGABRT' });
    expect(stopRequest('^NOPE')).toEqual({ signal: 'SIGKILL' });
    expect(stopRequest('stop')).toEqual({ line: 'stop' });
    expect(stopRequest('^ not a signal')).toEqual({ line: '^ not a signal' });
  });
});
