#!/usr/bin/env node
// Rewrites the old `SPEC n` / `SPEC n.n` and `CONTRACT.md` citations in the
// tree to the project's own reference (docs/reference), as
// docs/reference/SPEC-MAP.md maps them: `SPEC 13` becomes
// `docs/reference/network-and-allocations.md`, `SPEC 10, 15` becomes
// `docs/reference/containment.md, docs/reference/files-and-sftp.md`.
//
//   node scripts/rewrite-spec-refs.mjs [--dry-run] [--root DIR] [DIR ...]
//
// --root: the tree to rewrite (default: this checkout). DIRs: the folders in
// it (default: src test web bench scripts .ci), or single files. In a Markdown
// file a citation becomes a link relative to it. Prints the number of
// citations rewritten and of files changed. A section the map lacks stops the
// script before anything is written.
import fs from 'node:fs';
import path from 'node:path';

const HERE = path.dirname(new URL(import.meta.url).pathname);
const MAP_FILE = path.resolve(HERE, '../docs/reference/SPEC-MAP.md');
const DEFAULT_DIRS = ['src', 'test', 'web', 'bench', 'scripts', '.ci'];
const TEXT = /\.(ts|tsx|js|mjs|cjs|json|jsonc|md|css|html|sh|c|h|py)$/;
const SELF = path.resolve(new URL(import.meta.url).pathname);
/** This script and its test (rewrite-spec-refs.test.ts), here or in the tree being rewritten: their examples stay. */
const SELF_NAME = 'rewrite-spec-refs.';

/** `SPEC 10`, `SPEC 1.2`, and lists of them: `SPEC 1.2, 5 and 6`, `SPEC 10/13`. */
const SPEC_CITATION = /\bSPEC (\d+(?:\.\d+)?)((?:(?:, ?| and | or |\/)\d+(?:\.\d+)?\b)*)/g;
/** `CONTRACT.md "Admin command line"`, `CONTRACT.md, "First start"`, `CONTRACT.md`, `CONTRACT:`. */
const CONTRACT_CITATION = /\bCONTRACT(?:\.md)?(?:,? "([^"]+)")?(?![\w-])/g;

export function readMap(file = MAP_FILE) {
  // Table rows, however prettier pads them.
  const sections = new Map();
  const contract = new Map();
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const spec = /^\|\s*(\d+(?:\.\d+)?)\s*\|\s*\[[^\]]*\]\(([^)]+)\)\s*\|$/.exec(line);
    if (spec) sections.set(spec[1], `docs/reference/${spec[2]}`);
    const named = /^\|\s*CONTRACT\.md "([^"]+)"\s*\|\s*\[[^\]]*\]\(([^)]+)\)\s*\|$/.exec(line);
    if (named) contract.set(named[1], `docs/reference/${named[2]}`);
  }
  return { sections, contract };
}

function known(sections, section) {
  return sections.has(section) || sections.has(section.split('.')[0]);
}

function lookupTarget(sections, section, where) {
  const found = sections.get(section) ?? sections.get(section.split('.')[0]);
  if (!found) throw new Error(`${where}: SPEC ${section} is not in ${MAP_FILE}`);
  return found;
}

/**
 * How a target is written in `relativePath`: as it is in code, and in a
 * Markdown file as a link relative to that file (`SPEC 13` in docs/SFTP.md
 * becomes `[network-and-allocations](reference/network-and-allocations.md)`).
 */
function cite(target, relativePath) {
  if (!relativePath.endsWith('.md')) return target;
  const [file, hash] = target.split('#');
  const link = path.posix.relative(path.posix.dirname(relativePath), file) + (hash ? `#${hash}` : '');
  const name = path.posix.basename(file, '.md') + (hash ? `#${hash}` : '');
  return `[${name}](${link})`;
}

export function rewrite(text, relativePath, map) {
  let count = 0;
  let out = text.replace(SPEC_CITATION, (_whole, first, rest) => {
    count++;
    const lookup = (sections, section, where) => cite(lookupTarget(sections, section, where), relativePath);
    let replaced = lookup(map.sections, first, relativePath);
    // Keep the separators as written; a number that is no section (`SPEC 10, 30 s`) ends the list.
    const tail = /^(, ?| and | or |\/)(\d+(?:\.\d+)?)/;
    let remaining = rest;
    for (let next = tail.exec(remaining); next; next = tail.exec(remaining)) {
      if (!known(map.sections, next[2])) break;
      replaced += next[1] + lookup(map.sections, next[2], relativePath);
      remaining = remaining.slice(next[0].length);
    }
    return replaced + remaining;
  });
  const cliFile = /^(src|test)\/cli\//.test(relativePath);
  out = out.replace(CONTRACT_CITATION, (_whole, heading) => {
    count++;
    if (heading && map.contract.has(heading)) return cite(map.contract.get(heading), relativePath);
    return cite(cliFile ? 'docs/reference/cli.md' : 'docs/reference/configuration.md', relativePath);
  });
  return { text: out, count };
}

function files(dir) {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.name === 'node_modules' || entry.name === 'dist') return [];
    if (entry.isDirectory()) return files(full);
    if (!entry.isFile() || entry.name.startsWith(SELF_NAME)) return [];
    return TEXT.test(entry.name) || !entry.name.includes('.') ? [full] : [];
  });
}

function main(argv) {
  let root = path.resolve(HERE, '..');
  let dryRun = false;
  const dirs = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--dry-run') dryRun = true;
    else if (argv[i] === '--root') root = path.resolve(argv[++i]);
    else dirs.push(argv[i]);
  }
  const map = readMap(MAP_FILE);
  const changes = [];
  let citations = 0;
  for (const dir of dirs.length > 0 ? dirs : DEFAULT_DIRS) {
    const target = path.join(root, dir);
    for (const file of fs.existsSync(target) && fs.statSync(target).isFile() ? [target] : files(target)) {
      const before = fs.readFileSync(file, 'utf8');
      const relativePath = path.relative(root, file).split(path.sep).join('/');
      const { text, count } = rewrite(before, relativePath, map);
      if (count > 0 && text !== before) changes.push({ file, text });
      citations += count;
    }
  }
  // Everything resolved before the first write: a missing section leaves the tree untouched.
  if (!dryRun) for (const { file, text } of changes) fs.writeFileSync(file, text);
  console.log(`${dryRun ? 'would rewrite' : 'rewrote'} ${citations} citations in ${changes.length} files under ${root}`);
}

if (path.resolve(process.argv[1] ?? '') === SELF) main(process.argv.slice(2));
