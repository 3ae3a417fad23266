/**
 * Wings' `json` parser: each replacement sets the value at its path
 * (structured-path.ts), creating the objects on the way; the file is written
 * back indented by four spaces, as Wings writes it. Keys keep their order
 * (Wings sorts them). An empty file counts as `{}`; a file that is not JSON
 * is left as it is (the caller reports it).
 */
import { conditionalValue, typedValue, type Replacement } from './replacements.js';
import { parsePath, type PathSegment } from './structured-path.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Container = Json[] | { [key: string]: Json };

export function editJsonFile(text: string, replacements: readonly Replacement[]): string {
  let root = (text.trim() === '' ? {} : JSON.parse(text)) as Json;
  for (const replacement of replacements) {
    const { base, eachChild } = parsePath(replacement.match);
    if (eachChild === undefined) {
      root = setIfWanted(root, base, replacement);
      continue;
    }
    const parent = getAt(root, base);
    if (!isContainer(parent)) continue; // nothing to go through: as Wings, nothing happens
    for (const key of keysOf(parent)) {
      const child = childOf(parent, key);
      if (eachChild.length === 0) assign(parent, key, setIfWanted(child ?? null, [], replacement));
      else if (isContainer(child)) setIfWanted(child, eachChild, replacement);
    }
  }
  return `${JSON.stringify(root, null, 4)}${text.endsWith('\n') || text.trim() === '' ? '\n' : ''}`;
}

/** Sets the replacement's value at `path` under `root` (when its condition holds); returns the root (a new one for an empty path). */
function setIfWanted(root: Json, path: PathSegment[], replacement: Replacement): Json {
  const current = getAt(root, path);
  const next = conditionalValue(replacement, current === undefined ? undefined : asText(current));
  if (next === null) return root;
  const value = replacement.ifValue?.startsWith('regex:') ? next : typedValue(next);
  if (path.length === 0) return value;
  let container = root;
  for (let i = 0; i < path.length - 1; i++) {
    if (!isContainer(container)) throw collision(path, i);
    const key = path[i]!;
    let child = childOf(container, key);
    if (child === undefined) {
      child = typeof path[i + 1] === 'number' ? [] : {};
      assign(container, key, child, path);
    }
    container = child;
  }
  if (!isContainer(container)) throw collision(path, path.length - 1);
  assign(container, path[path.length - 1]!, value, path);
  return root;
}

function getAt(root: Json, path: PathSegment[]): Json | undefined {
  let node: Json | undefined = root;
  for (const key of path) {
    if (!isContainer(node)) return undefined;
    node = childOf(node, key);
  }
  return node;
}

function isContainer(value: Json | undefined): value is Container {
  return typeof value === 'object' && value !== null;
}

function keysOf(container: Container): PathSegment[] {
  return Array.isArray(container) ? container.map((_item, index) => index) : Object.keys(container);
}

function childOf(container: Container, key: PathSegment): Json | undefined {
  if (Array.isArray(container)) {
    const index = typeof key === 'number' ? key : /^\d+$/.test(key) ? Number(key) : -1;
    return index >= 0 && index < container.length ? container[index] : undefined;
  }
  return Object.hasOwn(container, String(key)) ? container[String(key)] : undefined;
}

/** An index may name an item or the one after the last (appended); further is refused, as Wings refuses it. */
function assign(container: Container, key: PathSegment, value: Json, path: PathSegment[] = [key]): void {
  if (!Array.isArray(container)) {
    container[String(key)] = value;
    return;
  }
  const index = typeof key === 'number' ? key : /^\d+$/.test(key) ? Number(key) : -1;
  if (index < 0 || index > container.length)
    throw new Error(`"${path.join('.')}": no item ${String(key)} in an array of ${container.length}`);
  container[index] = value;
}

function asText(value: Json): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The node reached through the first `at` segments is a plain value: nothing can be set under it. */
function collision(path: PathSegment[], at: number): Error {
  const where = at === 0 ? 'the top level' : `"${path.slice(0, at).join('.')}"`;
  return new Error(`cannot set "${path.join('.')}": ${where} is a value, not an object`);
}
