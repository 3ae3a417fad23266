/**
 * The paths yaml and json replacements use, as Wings reads them: keys split
 * at dots (`server.port`), an index after a key (`servers[0].address`, or a
 * number as its own segment inside an array), and one wildcard segment
 * (`servers.*.address`: every child of `servers`).
 */
export type PathSegment = string | number;

interface ParsedPath {
  /** The path up to the wildcard, or the whole path. */
  readonly base: PathSegment[];
  /** With a wildcard: the path set under each child of `base` (may be empty: the child itself). */
  readonly eachChild?: PathSegment[];
}

export function parsePath(match: string): ParsedPath {
  const wildcard = match.indexOf('.*');
  if (wildcard === -1) return { base: segmentsOf(match) };
  const after = match.slice(wildcard + 2).replace(/^\.+/, '');
  return { base: segmentsOf(match.slice(0, wildcard).replace(/\.+$/, '')), eachChild: segmentsOf(after) };
}

function segmentsOf(path: string): PathSegment[] {
  if (path === '') return [];
  const segments: PathSegment[] = [];
  for (const part of path.split('.')) {
    const indexed = /^([^[\]]*)((?:\[\d+\])+)$/.exec(part);
    if (!indexed) {
      segments.push(part);
      continue;
    }
    if (indexed[1]) segments.push(indexed[1]);
    for (const index of indexed[2]!.matchAll(/\[(\d+)\]/g)) segments.push(Number(index[1]));
  }
  return segments;
}
