/**
 * A small XML document model for config files (xml-file.ts): elements with
 * their tags as written, everything else (text, comments, declarations,
 * CDATA, a doctype) kept as raw text, so that writing it back gives the file
 * unchanged except where it was edited. Not a validating parser: it refuses
 * what it cannot read (an unclosed or mismatched tag) rather than guess.
 */
export type XmlNode = XmlElement | { kind: 'raw'; text: string };

export interface XmlElement {
  kind: 'element';
  name: string;
  /** The start tag as written (`<name a="1">` or `<name/>`); rewritten when an attribute changes. */
  openTag: string;
  /** null for an empty-element tag (`<name/>`) until something is put in it. */
  closeTag: string | null;
  children: XmlNode[];
}

const NAME = /^[^\s/>=]+/;

export function parseXml(text: string): XmlNode[] {
  const top: XmlNode[] = [];
  const stack: XmlElement[] = [];
  const into = () => (stack.length > 0 ? stack[stack.length - 1]!.children : top);
  let i = 0;
  while (i < text.length) {
    const lt = text.indexOf('<', i);
    if (lt === -1 || lt > i) {
      into().push({ kind: 'raw', text: text.slice(i, lt === -1 ? text.length : lt) });
      i = lt === -1 ? text.length : lt;
      continue;
    }
    const special = rawConstructEnd(text, i);
    if (special !== null) {
      into().push({ kind: 'raw', text: text.slice(i, special) });
      i = special;
      continue;
    }
    const end = tagEnd(text, i);
    const tag = text.slice(i, end);
    i = end;
    if (tag.startsWith('</')) {
      const name = tag.slice(2, -1).trim();
      const open = stack.pop();
      if (!open || open.name !== name) throw new Error(`</${name}> does not close ${open ? `<${open.name}>` : 'anything'}`);
      open.closeTag = tag;
      continue;
    }
    const name = NAME.exec(tag.slice(1))?.[0];
    if (!name) throw new Error(`a tag without a name at character ${i}`);
    const element: XmlElement = { kind: 'element', name, openTag: tag, closeTag: null, children: [] };
    into().push(element);
    if (!tag.endsWith('/>')) stack.push(element);
  }
  if (stack.length > 0) throw new Error(`<${stack[stack.length - 1]!.name}> is never closed`);
  return top;
}

/** The end of a comment, processing instruction, CDATA section or doctype starting at `i`; null when it is a tag. */
function rawConstructEnd(text: string, i: number): number | null {
  const ends: Array<[string, string]> = [
    ['<!--', '-->'],
    ['<?', '?>'],
    ['<![CDATA[', ']]>'],
  ];
  for (const [open, close] of ends) {
    if (!text.startsWith(open, i)) continue;
    const end = text.indexOf(close, i + open.length);
    if (end === -1) throw new Error(`${open} is never closed`);
    return end + close.length;
  }
  if (!text.startsWith('<!', i)) return null;
  // A doctype, perhaps with an internal subset in brackets.
  let depth = 0;
  for (let j = i + 2; j < text.length; j++) {
    if (text[j] === '[') depth++;
    else if (text[j] === ']') depth--;
    else if (text[j] === '>' && depth <= 0) return j + 1;
  }
  throw new Error('<! is never closed');
}

/** Past the `>` of the tag at `i`, skipping quoted attribute values. */
function tagEnd(text: string, i: number): number {
  let quote: string | null = null;
  for (let j = i + 1; j < text.length; j++) {
    const char = text[j]!;
    if (quote) {
      if (char === quote) quote = null;
    } else if (char === '"' || char === "'") quote = char;
    else if (char === '>') return j + 1;
  }
  throw new Error(`a tag at character ${i} is never closed`);
}

export function serializeXml(nodes: readonly XmlNode[]): string {
  return nodes
    .map((node) => {
      if (node.kind === 'raw') return node.text;
      if (node.closeTag === null) return node.openTag;
      return `${node.openTag}${serializeXml(node.children)}${node.closeTag}`;
    })
    .join('');
}

export function childElements(parent: { children: XmlNode[] }): XmlElement[] {
  return parent.children.filter((node): node is XmlElement => node.kind === 'element');
}

/** Sets (or adds) an attribute in the element's start tag, the rest of the tag as written. */
export function setAttribute(element: XmlElement, name: string, value: string): void {
  const escaped = value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');
  const existing = new RegExp(`(\\s${escapeRegExp(name)}\\s*=\\s*)("[^"]*"|'[^']*')`).exec(element.openTag);
  if (existing) {
    const at = existing.index + existing[1]!.length;
    element.openTag = `${element.openTag.slice(0, at)}"${escaped}"${element.openTag.slice(at + existing[2]!.length)}`;
    return;
  }
  const end = element.openTag.endsWith('/>') ? element.openTag.length - 2 : element.openTag.length - 1;
  const before = element.openTag.slice(0, end).replace(/\s+$/, '');
  element.openTag = `${before} ${name}="${escaped}"${element.openTag.slice(end)}`;
}

/** Replaces the text before the element's first child element (etree's SetText). */
export function setText(element: XmlElement, text: string): void {
  const escaped = text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  open(element);
  const firstElement = element.children.findIndex((node) => node.kind === 'element');
  const leading = firstElement === -1 ? element.children.length : firstElement;
  const kept = element.children.slice(0, leading).filter((node) => node.kind === 'raw' && node.text.startsWith('<!--'));
  element.children.splice(0, leading, ...kept, { kind: 'raw', text: escaped });
}

/** Adds an empty child element on a line of its own, indented one step (two spaces) deeper than `parent`. */
export function appendElement(parent: XmlElement, name: string, depth: number): XmlElement {
  open(parent);
  const child: XmlElement = { kind: 'element', name, openTag: `<${name}>`, closeTag: `</${name}>`, children: [] };
  const last = parent.children[parent.children.length - 1];
  const closingIndent = `\n${'  '.repeat(depth)}`;
  // Trailing blanks before the parent's end tag move after the new element.
  if (last?.kind === 'raw' && last.text.trim() === '' && !last.text.startsWith('<')) parent.children.pop();
  parent.children.push({ kind: 'raw', text: `\n${'  '.repeat(depth + 1)}` }, child, { kind: 'raw', text: closingIndent });
  return child;
}

function open(element: XmlElement): void {
  if (element.closeTag !== null) return;
  element.openTag = `${element.openTag.slice(0, -2).replace(/\s+$/, '')}>`;
  element.closeTag = `</${element.name}>`;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
