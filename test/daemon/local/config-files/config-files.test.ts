/**
 * The egg's config files (docs/reference/eggs-and-installs.md) edited on a real volume through the files
 * layer, as Wings edits them: one fixture per parser (properties, yaml, json,
 * ini, xml, file), missing files created, conditional values, a file that is
 * a link to outside the volume left alone (never followed), a broken file
 * reported on the console while the others are still edited.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ConfigFileEdit, DaemonServer } from '../../../../src/daemon/daemon.js';
import { applyConfigFiles, configFileFailureLine } from '../../../../src/daemon/local/config-files/apply-config-files.js';
import { daemonValues } from '../../../../src/daemon/local/config-files/daemon-values.js';
import { makeFilesSandbox, put, type FilesSandbox } from '../files/helpers.js';

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures');
/** Kept as `<name>.txt`: formatters leave them as a game would have written them. */
const fixture = (name: string) => fs.readFileSync(path.join(FIXTURES, `${name}.txt`), 'utf8');
const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

let box: FilesSandbox;
let consoleLog: string;
beforeEach(() => {
  box = makeFilesSandbox();
  consoleLog = path.join(box.root, 'console.log');
});
afterEach(() => box.cleanup());

/** Runs the edits as a start would, on the sandbox's volume. */
async function apply(...configFiles: ConfigFileEdit[]): Promise<void> {
  const server: DaemonServer = { ...box.server, configFiles };
  await applyConfigFiles(box.files, server, consoleLog, silent);
}

const read = (name: string) => fs.readFileSync(path.join(box.volume, name), 'utf8');
const consoleLines = () => (fs.existsSync(consoleLog) ? fs.readFileSync(consoleLog, 'utf8') : '');

describe("config files, Wings' parsers", () => {
  it('properties: sets keys in place, appends missing ones, escapes non-ASCII as Wings does, keeps comments and order', async () => {
    put(box.volume, 'server.properties', fixture('server.properties'));
    await apply({
      file: 'server.properties',
      parser: 'properties',
      find: {
        'server-ip': '0.0.0.0',
        'server-port': '25600',
        'query.port': '25600',
        motd: '§aWelcome',
        'online-mode': 'false',
        'enable-query': { false: 'true' }, // only where it is "false" now
        'level-name': { other: 'changed' }, // it is "world": left alone
      },
    });
    expect(read('server.properties')).toBe(
      [
        '#Minecraft server properties',
        '#Thu Nov 26 12:00:00 UTC 2026',
        'enable-query=true',
        'server-ip=0.0.0.0',
        'server-port=25600',
        '# players see this',
        'motd=\\u00a7aWelcome',
        'query.port=25600',
        'level-name=world',
        'online-mode=false',
        '',
      ].join('\n'),
    );
    expect(consoleLines()).toBe('');
  });

  it('properties: a key alone on its line gets `=`; a blank as the separator is kept', async () => {
    put(box.volume, 'server.properties', 'server-ip\nmotd hello\n  spaced : a \\\n    continued\n');
    await apply({
      file: 'server.properties',
      parser: 'properties',
      find: { 'server-ip': '0.0.0.0', motd: 'x', spaced: { 'a continued': 'b' } },
    });
    expect(read('server.properties')).toBe('server-ip=0.0.0.0\nmotd x\n  spaced : b\n');
  });

  it('yaml: index and wildcard paths, typed values, new paths created; comments and sequence style kept', async () => {
    put(box.volume, 'config.yml', fixture('config.yml'));
    await apply({
      file: 'config.yml',
      parser: 'yaml',
      find: {
        'listeners[0].query_port': '25600',
        'listeners[0].host': '0.0.0.0:25600',
        'servers.*.address': '127.0.0.1:25565',
        ip_forward: 'true',
        'new.nested.key': 'x',
      },
    });
    expect(read('config.yml')).toBe(
      fixture('config.yml')
        .replace('query_port: 25577\n  host: 0.0.0.0:25577', 'query_port: 25600\n  host: 0.0.0.0:25600')
        .replace(/localhost:2556[56]/g, '127.0.0.1:25565')
        .replace('ip_forward: false # keep', 'ip_forward: true # keep') + 'new:\n  nested:\n    key: x\n',
    );
  });

  it("yaml, BungeeCord's egg: a regex condition rewrites localhost backends to {{config.docker.interface}}, keeping their port", async () => {
    put(box.volume, 'config.yml', fixture('config.yml').replace('address: localhost:25566', 'address: 10.0.0.7:25566'));
    const server: DaemonServer = {
      ...box.server,
      configFiles: [
        {
          file: 'config.yml',
          parser: 'yaml',
          // The egg's own `find`, as the panel hands it over (its port filled in).
          find: {
            'listeners[0].query_port': '25600',
            'listeners[0].host': '0.0.0.0:25600',
            'servers.*.address': { 'regex:^(127\\.0\\.0\\.1|localhost)(:\\d{1,5})?$': '{{config.docker.interface}}$2' },
          },
        },
      ],
    };
    await applyConfigFiles(box.files, server, consoleLog, silent, daemonValues(false, undefined));
    expect(read('config.yml')).toContain('  lobby:\n    address: 127.0.0.1:25565\n');
    expect(read('config.yml')).toContain('  games:\n    address: 10.0.0.7:25566\n'); // not a localhost one: left
    expect(read('config.yml')).toContain('- query_port: 25600\n  host: 0.0.0.0:25600\n');
    // Confined, 127.0.0.1 would be the server's own loopback: an address of the machine, its allocation's here.
    expect(daemonValues(true, [{ ip: '192.0.2.10', port: 25565 }])('docker.interface')).toBe('192.0.2.10');
    expect(daemonValues(true, [{ ip: '0.0.0.0', port: 25565 }])('docker.network.interface')).not.toMatch(/^(127\.|0\.0\.0\.0$)/);
    expect(daemonValues(true, undefined)('docker.unknown')).toBeUndefined();
  });

  it('json: numbers and booleans typed, array items by index and by wildcard, conditional values, four-space indent', async () => {
    put(box.volume, 'settings.json', fixture('settings.json'));
    await apply({
      file: 'settings.json',
      parser: 'json',
      find: {
        port: '25600',
        'nested.ip': '0.0.0.0',
        'nested.list[1].p': '7',
        'servers.*.address': '0.0.0.0:1',
        name: { test: 'renamed' },
        'missing.key': 'true',
      },
    });
    expect(JSON.parse(read('settings.json'))).toEqual({
      name: 'renamed',
      port: 25600,
      nested: { ip: '0.0.0.0', list: [{ p: 1 }, { p: 7 }] },
      servers: [{ address: '0.0.0.0:1' }, { address: '0.0.0.0:1' }],
      missing: { key: true },
    });
    expect(read('settings.json')).toMatch(/^\{\n {4}"name": "renamed",\n {4}"port": 25600,/);
  });

  it('ini: section.key set in place or added to its section, keys before the first section, new sections at the end', async () => {
    put(box.volume, 'Game.ini', fixture('Game.ini'));
    await apply({
      file: 'Game.ini',
      parser: 'ini',
      find: { 'Server.Port': '25600', 'Server.Name': 'Quetzal', 'Server.MaxPlayers': '10', top: '2', 'NewSection.key': 'v' },
    });
    expect(read('Game.ini')).toBe(
      '; generated by the game\ntop=2\n\n[Server]\nPort=25600\nName=Quetzal\nMaxPlayers=10\n\n[Other]\na=b\n\n[NewSection]\nkey=v\n',
    );
  });

  it("xml: element text, attributes from [name='value'], missing elements created; the rest as written", async () => {
    put(box.volume, 'serverconfig.xml', fixture('serverconfig.xml'));
    await apply({
      file: 'serverconfig.xml',
      parser: 'xml',
      find: {
        'ServerSettings.Port': '25600',
        'ServerSettings.Network.Address': '0.0.0.0',
        'ServerSettings.Network.Ip': 'a<b',
        'ServerSettings.property': "[value='25600']",
        'ServerSettings.Flag.Deep': 'x',
      },
    });
    expect(read('serverconfig.xml')).toBe(
      [
        '<?xml version="1.0" encoding="utf-8"?>',
        '<!-- server settings -->',
        '<ServerSettings>',
        '  <property name="ServerPort" value="25600"/>',
        '  <Port>25600</Port>',
        '  <Network>',
        '    <Address>0.0.0.0</Address>',
        '    <Ip>a&lt;b</Ip>',
        '  </Network>',
        '  <Flag>',
        '    <Deep>x</Deep>',
        '  </Flag>',
        '</ServerSettings>',
        '',
      ].join('\n'),
    );
  });

  it('file: each line that starts with a key is replaced whole by its value', async () => {
    put(box.volume, 'server.cfg', fixture('server.cfg'));
    await apply({ file: 'server.cfg', parser: 'file', find: { 'port ': 'port 25600', maxplayers: 'maxplayers 20' } });
    expect(read('server.cfg')).toBe('port 25600\n// a comment\nmaxplayers 20\nhostname "old"\n');
  });

  it('creates a missing file (and its folders) as Wings does; a `file` edit of a missing file leaves it empty', async () => {
    await apply(
      { file: 'cfg/server.properties', parser: 'properties', find: { 'server-port': '25600' } },
      { file: 'cfg/config.yml', parser: 'yaml', find: { 'a.b': '1' } },
      { file: 'cfg/settings.json', parser: 'json', find: { 'a.b': 'x' } },
      { file: 'cfg/Game.ini', parser: 'ini', find: { 'Server.Port': '1' } },
      { file: 'cfg/config.xml', parser: 'xml', find: { 'Root.Port': '1' } },
      { file: 'cfg/plain.txt', parser: 'file', find: { port: 'port 1' } },
    );
    expect(read('cfg/server.properties')).toBe('server-port=25600\n');
    expect(read('cfg/config.yml')).toBe('a:\n  b: 1\n');
    expect(JSON.parse(read('cfg/settings.json'))).toEqual({ a: { b: 'x' } });
    expect(read('cfg/Game.ini')).toBe('[Server]\nPort = 1\n');
    expect(read('cfg/config.xml')).toBe('<?xml version="1.0" encoding="utf-8"?>\n<Root>\n  <Port>1</Port>\n</Root>\n');
    expect(read('cfg/plain.txt')).toBe('');
    expect(consoleLines()).toBe('');
  });
});

describe('config files, refusals', () => {
  it('never follows a config file that is a link to outside the volume: the outside file and the link stay, the console says why', async () => {
    const outsideFile = path.join(box.outside, 'secret.properties');
    fs.writeFileSync(outsideFile, 'server-port=1\n');
    fs.symlinkSync(outsideFile, path.join(box.volume, 'server.properties'));
    put(box.volume, 'server.cfg', 'port 1\n');
    await apply(
      { file: 'server.properties', parser: 'properties', find: { 'server-port': '25600' } },
      { file: 'server.cfg', parser: 'file', find: { port: 'port 2' } },
    );
    expect(fs.readFileSync(outsideFile, 'utf8')).toBe('server-port=1\n');
    expect(fs.lstatSync(path.join(box.volume, 'server.properties')).isSymbolicLink()).toBe(true);
    expect(fs.readlinkSync(path.join(box.volume, 'server.properties'))).toBe(outsideFile);
    expect(consoleLines()).toMatch(/^config file server\.properties was not updated: .*symlink.*\n$/);
    // The other file is still edited: one file's failure does not stop the rest (nor the start).
    expect(read('server.cfg')).toBe('port 2\n');
  });

  it('never follows a link in the folders on the way either', async () => {
    fs.symlinkSync(box.outside, path.join(box.volume, 'config'));
    await apply({ file: 'config/settings.json', parser: 'json', find: { port: '1' } });
    expect(fs.readdirSync(box.outside)).toEqual([]);
    expect(consoleLines()).toMatch(/^config file config\/settings\.json was not updated: /);
  });

  it('leaves a file it cannot parse as it is and says so on the console', async () => {
    put(box.volume, 'settings.json', '{ "port": ');
    put(box.volume, 'config.yml', 'a: [unclosed\n');
    put(box.volume, 'config.xml', '<Root><Port>1</Root>');
    await apply(
      { file: 'settings.json', parser: 'json', find: { port: '1' } },
      { file: 'config.yml', parser: 'yaml', find: { a: '1' } },
      { file: 'config.xml', parser: 'xml', find: { 'Root.Port': '2' } },
    );
    expect(read('settings.json')).toBe('{ "port": ');
    expect(read('config.yml')).toBe('a: [unclosed\n');
    expect(read('config.xml')).toBe('<Root><Port>1</Root>');
    const lines = consoleLines().trimEnd().split('\n');
    expect(lines.map((line) => line.split(':')[0])).toEqual([
      'config file settings.json was not updated',
      'config file config.yml was not updated',
      'config file config.xml was not updated',
    ]);
    expect(configFileFailureLine('a', 'b')).toBe('config file a was not updated: b');
  });
});
