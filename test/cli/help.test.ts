import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { COMMANDS } from '../../src/cli/commands/index.js';
import { COMMAND_HELP } from '../../src/cli/help.js';

/** `quetzal --help` and `quetzal <command> --help` describe every command and each of its options. */
async function run(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, { io: { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) }, env: {} });
  return { code, stdout, stderr };
}

describe('quetzal --help', () => {
  it('has a summary for every command and a line for every option, and nothing for options that do not exist', async () => {
    expect(Object.keys(COMMAND_HELP).sort()).toEqual(Object.keys(COMMANDS).sort());
    for (const [name, load] of Object.entries(COMMANDS)) {
      const command = await load();
      const repeatable = 'repeatableOptions' in command ? (command.repeatableOptions ?? []) : [];
      const options = [...new Set([...command.valueOptions, ...repeatable, ...(command.flagOptions ?? [])])].sort();
      const help = COMMAND_HELP[name]!;
      expect(help.summary, name).not.toBe('');
      expect(Object.keys(help.options).sort(), name).toEqual(options);
    }
  });

  it('lists each command with what it does', async () => {
    const top = await run(['--help']);
    expect(top.code).toBe(0);
    const lines = top.stdout.split('\n');
    for (const [name, help] of Object.entries(COMMAND_HELP)) {
      const at = lines.findIndex((line) => line.startsWith(`  ${name} `) || line === `  ${name}`);
      expect(at, name).toBeGreaterThan(0);
      // Below its options, or in their place when it takes none.
      const said = lines[at]!.endsWith(`  ${help.summary}`) || lines[at + 1]!.trim() === help.summary;
      expect(said, name).toBe(true);
    }
    expect(top.stdout).toContain('`quetzal <command> --help` shows its options.');
  });

  it('describes one command: usage, summary and each option', async () => {
    const help = await run(['server:delete', '--help']);
    expect(help).toMatchObject({ code: 0, stderr: '' });
    expect(help.stdout).toContain('usage: quetzal server:delete --server S [--force]\n');
    expect(help.stdout).toContain(`\n${COMMAND_HELP['server:delete']!.summary}\n`);
    expect(help.stdout).toMatch(/^ {2}--server +the server: its UUID or 8-character short identifier$/m);
    expect(help.stdout).toMatch(/^ {2}--force +even while it runs, or when a database host cannot drop its databases$/m);
    expect(help.stdout).toMatch(/^ {2}--json +/m);

    const serve = await run(['serve', '--help']);
    expect(serve.code).toBe(0);
    expect(serve.stdout).toContain(COMMAND_HELP.serve!.summary);
    expect(serve.stdout).not.toContain('--json');
  });
});
