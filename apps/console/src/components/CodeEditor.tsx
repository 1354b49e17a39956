import { python } from '@codemirror/lang-python';
import { EditorState } from '@codemirror/state';
import { EditorView } from '@codemirror/view';
import { basicSetup } from 'codemirror';
import { type ReactNode, useEffect, useRef } from 'react';

export interface CodeEditorProps {
  /** The accessible name of the editing area (it has no visible <label>: CodeMirror's content is not an input). */
  label: string;
  value: string;
  onChange?: (value: string) => void;
  readOnly?: boolean;
}

/** Inside the shadow root the page's style sheet does not apply: the editor's look is its own theme. */
const THEME = EditorView.theme({
  '&': { minHeight: '12rem', maxHeight: '32rem', backgroundColor: '#fff', fontSize: '0.9rem' },
  '&.cm-focused': { outline: '3px solid #3b82f6', outlineOffset: '2px' },
  '.cm-scroller': { fontFamily: 'ui-monospace, monospace', overflow: 'auto' },
  '.cm-content, .cm-gutter': { minHeight: '12rem' },
});

/**
 * A Python editor (CodeMirror 6: syntax highlighting, line numbers, bracket matching, undo, search). Loaded
 * with React.lazy by the pages using it, so the editor's code is fetched only when one opens.
 */
export default function CodeEditor({ label, value, onChange, readOnly = false }: CodeEditorProps): ReactNode {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  // The latest callback, read by the one listener the editor was created with.
  const changed = useRef(onChange);
  changed.current = onChange;

  useEffect(() => {
    if (!host.current) return;
    // CodeMirror makes its styles at run time. In the document they would be an inline <style>, which the
    // console's Content-Security-Policy (style-src 'self') refuses; in a shadow root they are constructed
    // style sheets, which it allows. (The shadow root outlives a remount: attachShadow works once.)
    const root = host.current.shadowRoot ?? host.current.attachShadow({ mode: 'open' });
    const parent = document.createElement('div');
    root.appendChild(parent);
    const v = new EditorView({
      root,
      parent,
      state: EditorState.create({
        doc: value,
        extensions: [
          basicSetup,
          python(),
          THEME,
          EditorState.readOnly.of(readOnly),
          EditorView.editable.of(!readOnly),
          EditorView.contentAttributes.of({ 'aria-label': label }),
          EditorView.updateListener.of((u) => {
            if (u.docChanged) changed.current?.(u.state.doc.toString());
          }),
        ],
      }),
    });
    view.current = v;
    return () => {
      v.destroy();
      parent.remove();
      view.current = null;
    };
    // Created once per mount: the value is kept in step below; the label and mode do not change.
  }, []);

  // A script replaced from outside (a saved rewrite, another tap loaded) replaces the document.
  useEffect(() => {
    const v = view.current;
    if (v && v.state.doc.toString() !== value)
      v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: value } });
  }, [value]);

  return <div className="code-editor" ref={host} data-testid="code-editor" />;
}
