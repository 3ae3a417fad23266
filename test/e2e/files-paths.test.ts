import { describe, expect, it } from 'vitest';
import {
  baseName,
  crumbsOf,
  destinationOf,
  isArchive,
  isTextFile,
  joinPath,
  normalisePath,
  parentOf,
  relativeToRoot,
} from '../../web/src/lib/file-paths.js';

/**
 * How the Files pages read and build volume paths (web/src/lib/file-paths.ts):
 * one clean absolute form for the address and the API, a rename dialog's
 * answer as a name or a path, and which names the editor and decompress take.
 */

describe('volume paths in the console', () => {
  it('cleans a path to one absolute form: no empty, . or .. parts, never above the root', () => {
    expect(normalisePath('')).toBe('/');
    expect(normalisePath('//config///./world/')).toBe('/config/world');
    expect(normalisePath('/a/b/../c')).toBe('/a/c');
    expect(normalisePath('../../etc/passwd')).toBe('/etc/passwd');
    expect(joinPath('/config', 'server.json')).toBe('/config/server.json');
    expect(parentOf('/config/server.json')).toBe('/config');
    expect(parentOf('/')).toBe('/');
    expect(baseName('/config/server.json')).toBe('server.json');
    expect(relativeToRoot('/plugins/a.jar')).toBe('plugins/a.jar');
  });

  it('gives the breadcrumbs of a folder, each with its path', () => {
    expect(crumbsOf('/')).toEqual([]);
    expect(crumbsOf('/config/world')).toEqual([
      { name: 'config', path: '/config' },
      { name: 'world', path: '/config/world' },
    ]);
  });

  it("reads a rename dialog's answer: a name stays in the folder, a path moves, from the folder or from the root", () => {
    expect(destinationOf('/config', ' new.json ')).toBe('/config/new.json');
    expect(destinationOf('/config', '../backups/old.json')).toBe('/backups/old.json');
    expect(destinationOf('/config', 'world/moved.json')).toBe('/config/world/moved.json');
    expect(destinationOf('/config', '/plugins/x.json')).toBe('/plugins/x.json');
  });

  it('knows the archives decompress takes and the files the editor opens', () => {
    for (const name of ['a.tar.gz', 'b.TGZ', 'c.tar', 'd.zip']) expect(isArchive(name), name).toBe(true);
    for (const name of ['a.gz', 'b.rar', 'c.jar', 'zip']) expect(isArchive(name), name).toBe(false);
    expect(isTextFile('server.properties', 'application/octet-stream')).toBe(true);
    expect(isTextFile('data.bin', 'text/plain')).toBe(true);
    expect(isTextFile('Makefile', 'application/octet-stream')).toBe(true);
    expect(isTextFile('world.mca', 'application/octet-stream')).toBe(false);
    expect(isTextFile('plugin.jar', 'application/java-archive')).toBe(false);
  });
});
