/**
 * The console lines that mean "started" (docs/reference/eggs-and-installs.md, the egg's
 * `config.startup.done`): a server with some stays `starting` until its
 * console prints a line that contains one of them, then it is `running`.
 * Matched as Wings matches them: a plain string is looked for anywhere in the
 * line (case-sensitive); `regex:<expression>` is a regular expression searched
 * in the line. An expression that does not compile is looked for as plain
 * text, `regex:` included (Wings logs it and does the same).
 *
 * The console is watched from before the process is spawned (a server may
 * print its line at once), through the console tails (console-tail.ts), which
 * read what is appended to `<uuid>.log` from the moment the watch begins.
 *
 * Nothing of this is kept on disk: a SIGKILL of the service leaves the server
 * running, and the next service adopts it as `running` (pid files know no
 * `starting`); a plain process group is stopped there anyway (group-launcher.ts).
 */
import { ConsoleTails } from './console-tail.js';
import type { ConsoleWatch } from './supervisor-options.js';

const REGEX_PREFIX = 'regex:';

/** Whether a console line is one of `patterns`; null when there are none (running as soon as the process is up). */
export function doneLineMatcher(patterns: readonly string[] | undefined): ((line: string) => boolean) | null {
  const matchers = (patterns ?? []).filter((pattern) => pattern.length > 0).map(matcherOf);
  if (matchers.length === 0) return null;
  return (line) => matchers.some((matches) => matches(line));
}

function matcherOf(pattern: string): (line: string) => boolean {
  if (pattern.startsWith(REGEX_PREFIX) && pattern.length > REGEX_PREFIX.length) {
    try {
      const expression = new RegExp(pattern.slice(REGEX_PREFIX.length));
      return (line) => expression.test(line);
    } catch {
      // As Wings: an expression that does not compile is looked for as it is written.
    }
  }
  return (line) => line.includes(pattern);
}

/** One start's watch for its done line. */
export interface DoneWatch {
  /** Calls `onDone` once, when a done line is printed (at once when one already was). */
  whenDone(onDone: () => void): void;
  /** Stops following the console (idempotent). */
  cancel(): void;
}

export class DoneLines {
  private tails: ConsoleTails | undefined;

  /** `watchConsole`: the daemon's shared console tails; without it, tails of this supervisor's own on `logDir`. */
  constructor(
    private readonly logDir: string,
    private readonly watchConsole?: ConsoleWatch,
  ) {}

  /** Before a launch: follows the console for one of the server's done lines; null when it has none. */
  arm(target: { readonly uuid: string; readonly doneLines?: readonly string[] }): DoneWatch | null {
    const matches = doneLineMatcher(target.doneLines);
    if (matches === null) return null;
    let seen = false;
    let callback: (() => void) | null = null;
    let stop: (() => void) | null = null;
    const cancel = () => {
      stop?.();
      stop = null;
      callback = null;
    };
    const fire = () => {
      const onDone = callback;
      cancel();
      onDone?.();
    };
    stop = this.watch(target.uuid, (line) => {
      if (seen || !matches(line)) return;
      seen = true;
      if (callback) fire();
    });
    return {
      whenDone(onDone) {
        callback = onDone;
        if (seen) fire();
      },
      cancel,
    };
  }

  private watch(serverUuid: string, onLine: (line: string) => void): () => void {
    if (this.watchConsole) return this.watchConsole(serverUuid, onLine);
    this.tails ??= new ConsoleTails(this.logDir);
    return this.tails.watch(serverUuid, onLine);
  }
}
