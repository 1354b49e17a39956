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
    const v = new EditorView({
      parent: host.current,
      state: EditorState.create({
        doc: value,
        extensions: [
          basicSetup,
          python(),
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
