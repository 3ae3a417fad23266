/**
 * Wings' `xml` parser: a key `Root.A.B` is the path `./Root/A/B` (`*`
 * matches any element); without a wildcard, missing elements on the way are
 * created under the document's root (a root named after the first segment
 * when the document has none). Every element the path finds gets the value
 * as its text, or, for a value `[name='value']`, that attribute. The rest of
 * the file is kept as written (Wings re-indents the whole document).
 * `if_value` is ignored, as Wings ignores it here.
 */
import type { Replacement } from './replacements.js';
import {
  appendElement,
  childElements,
  parseXml,
  serializeXml,
  setAttribute,
  setText,
  type XmlElement,
  type XmlNode,
} from './xml-document.js';

const ATTRIBUTE_VALUE = /^\[(\w+)='(.*)'\]$/s;
const DECLARATION = '<?xml version="1.0" encoding="utf-8"?>';

export function editXmlFile(text: string, replacements: readonly Replacement[]): string {
  const nodes = parseXml(text);
  for (const replacement of replacements) {
    const parts = replacement.match.split('.');
    let root = childElements({ children: nodes })[0];
    if (!root) {
      if (nodes.length === 0 || nodes.every((node) => node.kind === 'raw' && node.text.trim() === '')) {
        nodes.splice(0, nodes.length, { kind: 'raw', text: `${DECLARATION}\n` });
      }
      root = { kind: 'element', name: parts[0]!, openTag: `<${parts[0]!}>`, closeTag: `</${parts[0]!}>`, children: [] };
      nodes.push(root, { kind: 'raw', text: '\n' });
    }
    if (!parts.includes('*')) ensurePath(root, parts.slice(1));
    const attribute = ATTRIBUTE_VALUE.exec(replacement.value);
    for (const element of findElements(nodes, parts)) {
      if (attribute) setAttribute(element, attribute[1]!, attribute[2]!);
      else setText(element, replacement.value);
    }
  }
  return serializeXml(nodes);
}

function ensurePath(root: XmlElement, names: readonly string[]): void {
  let element = root;
  names.forEach((name, depth) => {
    element = childElements(element).find((child) => child.name === name) ?? appendElement(element, name, depth);
  });
}

function findElements(nodes: XmlNode[], parts: readonly string[]): XmlElement[] {
  let found: XmlElement[] = [{ kind: 'element', name: '', openTag: '', closeTag: '', children: nodes }];
  for (const part of parts) {
    found = found.flatMap((element) => childElements(element).filter((child) => part === '*' || child.name === part));
  }
  return found;
}
