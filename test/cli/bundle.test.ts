import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { currentBundle } from '../../bin/current-bundle.js';
import { ROOT } from './helpers.js';

const run = promisify(execFile);

describe('the bundle bin/quetzal.js runs when it is current', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-bundle-'));
  const rootUrl = pathToFileURL(`${root}/`);
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  const write = (file: string, text: string, mtimeSeconds: number) => {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), text);
    fs.utimesSync(path.join(root, file), mtimeSeconds, mtimeSeconds);
  };

  it('is used only while built after every source it lists', () => {
    expect(currentBundle(rootUrl)).toBeUndefined();
    write('src/a.ts', 'a', 1000);
    write('package-lock.json', '{}', 1000);
    write('dist/quetzal.inputs.json', JSON.stringify(['src/a.ts', 'package-lock.json']), 2000);
    write('dist/quetzal.mjs', 'export {}', 2000);
    expect(currentBundle(rootUrl)?.href).toBe(new URL('dist/quetzal.mjs', rootUrl).href);

    // A source changed since: the sources run instead.
    fs.utimesSync(path.join(root, 'src/a.ts'), 3000, 3000);
    expect(currentBundle(rootUrl)).toBeUndefined();
    fs.utimesSync(path.join(root, 'src/a.ts'), 1000, 1000);
    fs.utimesSync(path.join(root, 'package-lock.json'), 3000, 3000);
    expect(currentBundle(rootUrl)).toBeUndefined();
    fs.utimesSync(path.join(root, 'package-lock.json'), 1000, 1000);
    expect(currentBundle(rootUrl)).toBeDefined();

    // A listed source gone, an unreadable or empty list, no bundle: none either.
    fs.renameSync(path.join(root, 'src/a.ts'), path.join(root, 'src/b.ts'));
    expect(currentBundle(rootUrl)).toBeUndefined();
    fs.renameSync(path.join(root, 'src/b.ts'), path.join(root, 'src/a.ts'));
    write('dist/quetzal.inputs.json', 'not json', 2000);
    expect(currentBundle(rootUrl)).toBeUndefined();
    write('dist/quetzal.inputs.json', '[]', 2000);
    expect(currentBundle(rootUrl)).toBeUndefined();
    write('dist/quetzal.inputs.json', JSON.stringify(['src/a.ts']), 2000);
    fs.rmSync(path.join(root, 'dist/quetzal.mjs'));
    expect(currentBundle(rootUrl)).toBeUndefined();
  });

  it('builds from the sources and runs a command', async () => {
    // Inside the project, so that the packages left outside the bundle resolve from node_modules.
    const outdir = path.join(ROOT, 'dist', `.test-${randomBytes(4).toString('hex')}`);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-bundle-data-'));
    try {
      await run(process.execPath, [path.join(ROOT, 'scripts/build.js'), '--outdir', outdir]);
      const inputs = JSON.parse(fs.readFileSync(path.join(outdir, 'quetzal.inputs.json'), 'utf8')) as string[];
      expect(inputs).toContain('src/cli/main.ts');
      expect(inputs).toContain('package-lock.json');
      expect(inputs.every((input) => fs.existsSync(path.join(ROOT, input)))).toBe(true);
      const bundle = pathToFileURL(path.join(outdir, 'quetzal.mjs')).href;
      const script = `const { runCli } = await import(${JSON.stringify(bundle)}); process.exitCode = await runCli(['migrate', '--json']);`;
      const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
        env: { PATH: process.env.PATH, DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
      });
      expect(JSON.parse(stdout)).toEqual({ migrated: true });
      expect(fs.existsSync(path.join(dataDir, 'quetzal.sqlite'))).toBe(true);
    } finally {
      fs.rmSync(outdir, { recursive: true, force: true });
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
