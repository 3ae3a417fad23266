/**
 * Wings' `yaml` parser: the same paths and values as json (json-file.ts),
 * set in the parsed document, which keeps the file's comments, order and
 * style, sequences indented or not (Wings re-writes the whole file without its comments). An empty file
 * is an empty mapping; a file that is not YAML is left as it is.
 */
import { isCollection, isMap, isScalar, isSeq, parseDocument, type Document } from 'yaml';
import { conditionalValue, typedValue, type Replacement } from './replacements.js';
import { parsePath, type PathSegment } from './structured-path.js';

export function editYamlFile(text: string, replacements: readonly Replacement[]): string {
  const doc = parseDocument(text);
  if (doc.errors.length > 0) throw new Error(`not valid YAML: ${doc.errors[0]!.message.split('\n')[0]}`);
  for (const replacement of replacements) {
    const { base, eachChild } = parsePath(replacement.match);
    if (eachChild === undefined) {
      setIfWanted(doc, base, replacement);
      continue;
    }
    const parent = doc.getIn(base, true);
    const children = isMap(parent) ? parent.items.map((pair) => pair.value) : isSeq(parent) ? parent.items : [];
    for (const child of children) {
      if (isCollection(child) && eachChild.length > 0) setIfWanted(child, eachChild, replacement);
    }
  }
  return doc.toString({ lineWidth: 0, indentSeq: sequencesIndented(text) });
}

/** Whether the file indents a sequence under its key (`key:\n  - a`) or not (`key:\n- a`, BungeeCord's way): kept as it is. */
function sequencesIndented(text: string): boolean {
  const first = /^( *)[^\s#-][^\n]*:[ \t]*\r?\n( *)- /m.exec(text);
  return first === null || first[2]!.length > first[1]!.length;
}

type Settable = Pick<Document, 'getIn' | 'setIn'>;

function setIfWanted(node: Settable, path: PathSegment[], replacement: Replacement): void {
  const current = node.getIn(path, true);
  const currentText = current === undefined ? undefined : isScalar(current) ? String(current.value) : String(current);
  const next = conditionalValue(replacement, currentText);
  if (next === null) return;
  try {
    node.setIn(path, replacement.ifValue?.startsWith('regex:') ? next : typedValue(next));
  } catch (err) {
    throw new Error(`cannot set "${path.join('.')}": ${err instanceof Error ? err.message : String(err)}`);
  }
}
