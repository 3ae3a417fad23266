import {
  HighlightStyle,
  defaultHighlightStyle,
  syntaxHighlighting,
  type LanguageSupport,
  type StreamParser,
} from '@codemirror/language';
import { Compartment, EditorState, type Extension } from '@codemirror/state';
import { EditorView, keymap } from '@codemirror/view';
import { basicSetup } from 'codemirror';
import { useEffect, useRef } from 'preact/hooks';

/**
 * CodeMirror 6 on the editor page only: this module and CodeMirror are
 * imported by pages/file-editor.tsx, itself loaded when first visited, so the
 * console's first load carries none of it; each language is one more chunk,
 * fetched for the extension of the file opened. Colours come from the
 * stylesheet's variables (light and dark), highlighting from CodeMirror's
 * default style with its colours turned into those variables.
 */

async function streamLanguage(parser: Promise<StreamParser<unknown>>): Promise<Extension> {
  const { StreamLanguage } = await import('@codemirror/language');
  return StreamLanguage.define(await parser);
}

const LANGUAGES: { pattern: RegExp; load(): Promise<Extension | LanguageSupport> }[] = [
  { pattern: /\.(json|mcmeta|json5)$/i, load: async () => (await import('@codemirror/lang-json')).json() },
  { pattern: /\.ya?ml$/i, load: async () => (await import('@codemirror/lang-yaml')).yaml() },
  {
    pattern: /\.(ts|mts|cts)$/i,
    load: async () => (await import('@codemirror/lang-javascript')).javascript({ typescript: true }),
  },
  {
    pattern: /\.tsx$/i,
    load: async () => (await import('@codemirror/lang-javascript')).javascript({ typescript: true, jsx: true }),
  },
  { pattern: /\.(js|mjs|cjs|jsx)$/i, load: async () => (await import('@codemirror/lang-javascript')).javascript({ jsx: true }) },
  { pattern: /\.(xml|svg|html?|xhtml)$/i, load: async () => (await import('@codemirror/lang-xml')).xml() },
  {
    pattern: /\.(properties|cfg|conf|ini|env|lang)$/i,
    load: () =>
      streamLanguage(import('@codemirror/legacy-modes/mode/properties').then((m) => m.properties as StreamParser<unknown>)),
  },
  {
    pattern: /\.toml$/i,
    load: () => streamLanguage(import('@codemirror/legacy-modes/mode/toml').then((m) => m.toml as StreamParser<unknown>)),
  },
  {
    pattern: /(\.(sh|bash)|^\.?(bashrc|profile))$/i,
    load: () => streamLanguage(import('@codemirror/legacy-modes/mode/shell').then((m) => m.shell as StreamParser<unknown>)),
  },
];

/** The language of a file by its name's extension; null when none is known (plain text). */
function languageFor(name: string): Promise<Extension> | null {
  return LANGUAGES.find(({ pattern }) => pattern.test(name))?.load() ?? null;
}

/** The default style's colours, each behind a stylesheet variable (styles.css darkens or lightens them per scheme). */
const highlightStyle = HighlightStyle.define(
  defaultHighlightStyle.specs.map((spec) =>
    typeof spec.color === 'string' ? { ...spec, color: `var(--tok-${spec.color.replace('#', '')}, ${spec.color})` } : spec,
  ),
);

const theme = EditorView.theme({
  '&': { backgroundColor: 'var(--surface)', color: 'var(--text)', height: '100%' },
  '&.cm-focused': { outline: '3px solid var(--focus)', outlineOffset: '-3px' },
  '.cm-scroller': { fontFamily: 'var(--mono)', fontSize: '0.9rem', lineHeight: '1.5' },
  '.cm-gutters': { backgroundColor: 'var(--surface-2)', color: 'var(--muted)', borderRight: '1px solid var(--border)' },
  '.cm-activeLine, .cm-activeLineGutter': { backgroundColor: 'var(--editor-active-line)' },
  '.cm-cursor': { borderLeftColor: 'var(--text)' },
});

interface CodeEditorProps {
  name: string;
  initial: string;
  label: string;
  readOnly: boolean;
  onChange(text: string): void;
  onSave(): void;
}

/** What may change while the editor is open: its accessible name and whether it takes typing. */
function settingsOf(label: string, readOnly: boolean): Extension {
  return [EditorState.readOnly.of(readOnly), EditorView.contentAttributes.of({ 'aria-label': label })];
}

/**
 * The editor, created once per file: `initial` is the document it starts
 * with and is read only when it mounts (a new file remounts it, keyed by the
 * page); the name's language, the label and read-only follow their props.
 */
export function CodeEditor({ name, initial, label, readOnly, onChange, onSave }: CodeEditorProps) {
  const host = useRef<HTMLDivElement>(null);
  // The callbacks of the latest render, so that the editor's listeners (made once) never call stale ones.
  const latest = useRef({ onChange, onSave });
  latest.current = { onChange, onSave };
  // What the editor is created with; later props reach it through the compartments below.
  const created = useRef({ initial, label, readOnly });
  const language = useRef(new Compartment());
  const settings = useRef(new Compartment());
  const view = useRef<EditorView | null>(null);

  useEffect(() => {
    if (!host.current) return;
    // In a shadow root of its own, CodeMirror styles itself with a constructed stylesheet, which the
    // console's Content-Security-Policy (style-src 'self') allows; in the document it would add a
    // <style> element, which the policy refuses. The stylesheet's variables still reach it (inherited).
    const shadow = host.current.shadowRoot ?? host.current.attachShadow({ mode: 'open' });
    const parent = document.createElement('div');
    parent.style.height = '100%';
    shadow.replaceChildren(parent);
    const start = created.current;
    const editor = new EditorView({
      root: shadow,
      parent,
      state: EditorState.create({
        doc: start.initial,
        extensions: [
          keymap.of([{ key: 'Mod-s', preventDefault: true, run: () => (latest.current.onSave(), true) }]),
          basicSetup,
          syntaxHighlighting(highlightStyle),
          theme,
          language.current.of([]),
          settings.current.of(settingsOf(start.label, start.readOnly)),
          EditorView.updateListener.of((update) => {
            if (update.docChanged) latest.current.onChange(update.state.doc.toString());
          }),
        ],
      }),
    });
    view.current = editor;
    return () => {
      editor.destroy();
      parent.remove();
      view.current = null;
    };
  }, []);

  useEffect(() => {
    view.current?.dispatch({ effects: settings.current.reconfigure(settingsOf(label, readOnly)) });
  }, [label, readOnly]);

  useEffect(() => {
    let cancelled = false;
    const loading = languageFor(name);
    if (!loading) {
      // A name without a known language (a new file's, renamed as typed): plain text again.
      view.current?.dispatch({ effects: language.current.reconfigure([]) });
      return;
    }
    void loading.then((extension) => {
      if (!cancelled) view.current?.dispatch({ effects: language.current.reconfigure(extension) });
    });
    return () => {
      cancelled = true;
    };
  }, [name]);

  return <div ref={host} class="code-editor" />;
}
