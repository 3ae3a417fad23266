import { CliError, type CliContext } from './command.js';

/** More than any line a command reads (a password is at most 1024 bytes): input beyond it is refused, not buffered. */
const MAX_LINE_BYTES = 64 * 1024;

/**
 * The first line of the process's standard input, without its line ending.
 * Piped input is read until the first newline or its end. On a terminal the
 * person is asked on standard error and the typing is not shown.
 */
export function readProcessStdinLine(prompt: string): Promise<string> {
  const stdin = process.stdin;
  if (stdin.isTTY) return readHiddenLine(prompt);
  return new Promise((resolve, reject) => {
    let text = '';
    let bytes = 0;
    const finish = (error: Error | null, line?: string) => {
      stdin.off('data', onData).off('end', onEnd).off('error', onError);
      stdin.pause();
      if (error) reject(error);
      else resolve(line!);
    };
    const onData = (chunk: Buffer) => {
      bytes += chunk.length;
      text += chunk.toString('utf8');
      const newline = text.indexOf('\n');
      if (newline !== -1) finish(null, text.slice(0, newline).replace(/\r$/, ''));
      else if (bytes > MAX_LINE_BYTES) finish(new CliError('the line on standard input is too long'));
    };
    const onEnd = () => finish(null, text.replace(/\r$/, ''));
    const onError = (err: Error) => finish(err);
    stdin.on('data', onData).on('end', onEnd).on('error', onError);
    stdin.resume();
  });
}

function readHiddenLine(prompt: string): Promise<string> {
  const stdin = process.stdin;
  process.stderr.write(prompt);
  stdin.setRawMode(true);
  return new Promise((resolve, reject) => {
    let line = '';
    const finish = (error: Error | null) => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write('\n');
      if (error) reject(error);
      else resolve(line);
    };
    const onData = (chunk: Buffer) => {
      for (const char of chunk.toString('utf8')) {
        if (char === '\r' || char === '\n' || char === '\u0004') return finish(null);
        if (char === '\u0003') return finish(new CliError('cancelled'));
        if (char === '\u007f' || char === '\b') line = [...line].slice(0, -1).join('');
        else line += char;
      }
    };
    stdin.on('data', onData);
    stdin.resume();
  });
}

/** One line of standard input (the context's reader: tests give their own). */
export function readStdinLine(ctx: CliContext, prompt: string): Promise<string> {
  return (ctx.readStdinLine ?? readProcessStdinLine)(prompt);
}
