import { useMemo, useState } from 'react';
import {
  changedMembers,
  displayValue,
  draftOf,
  fieldsOf,
  parseArgsJson,
  parseDraft,
  TOOL_MEMBER,
  type ArgField,
  type Args,
  type Draft,
} from '../tool-args.ts';

/** The arguments as proposed (or as approved), read-only. */
export function ArgsView({ args }: { args: Args }) {
  const fields = fieldsOf(args);
  if (fields.length === 0) return <p className="muted">No arguments.</p>;
  return (
    <dl className="args">
      {fields.map((field) => (
        <div key={field.name} className="arg">
          <dt>{field.name}</dt>
          <dd>
            <ValueText value={field.proposed} />
          </dd>
        </div>
      ))}
    </dl>
  );
}

function ValueText({ value }: { value: unknown }) {
  if (value === null) return <span className="muted">null</span>;
  if (typeof value === 'string' && value === '') return <span className="muted">(empty)</span>;
  const text = displayValue(value);
  return typeof value === 'object' && !Array.isArray(value) ? (
    <pre>{text}</pre>
  ) : (
    <span className="value">{text}</span>
  );
}

export type EditorMode = 'form' | 'json';

export interface ArgsEditorState {
  mode: EditorMode;
  setMode(mode: EditorMode): void;
  fields: ArgField[];
  drafts: Record<string, Draft>;
  setDraft(name: string, draft: Draft): void;
  json: string;
  setJson(text: string): void;
  /** Per-field problems (form) or the one problem of the JSON text. */
  problems: Record<string, string>;
  jsonProblem: string | undefined;
  /** The edited arguments when every field parses. */
  edited: Args | undefined;
  /** What an approval sends: the changed members only. */
  changes: Args;
}

/** The editor's state, kept by the approval it edits. */
export function useArgsEditor(proposed: Args): ArgsEditorState {
  const fields = useMemo(() => fieldsOf(proposed), [proposed]);
  const initialDrafts = () => Object.fromEntries(fields.map((f) => [f.name, draftOf(f.kind, f.proposed)]));
  const [mode, setModeState] = useState<EditorMode>('form');
  const [drafts, setDrafts] = useState<Record<string, Draft>>(initialDrafts);
  const [json, setJson] = useState(() => JSON.stringify(proposed, null, 2));
  // New arguments (the agent revised them): edits start again from them, never carry stale values over.
  const proposedJson = JSON.stringify(proposed);
  const [editing, setEditing] = useState(proposedJson);
  if (editing !== proposedJson) {
    setEditing(proposedJson);
    setDrafts(initialDrafts());
    setJson(JSON.stringify(proposed, null, 2));
  }

  const fromForm = useMemo(() => {
    const problems: Record<string, string> = {};
    const args: Args = { ...proposed };
    for (const field of fields) {
      const parsed = parseDraft(field.kind, drafts[field.name] ?? '');
      if (parsed.ok) args[field.name] = parsed.value;
      else problems[field.name] = parsed.message;
    }
    return { problems, args: Object.keys(problems).length === 0 ? args : undefined };
  }, [drafts, fields, proposed]);
  const fromJson = useMemo(() => parseArgsJson(json, proposed), [json, proposed]);

  const edited = mode === 'form' ? fromForm.args : fromJson.ok ? fromJson.value : undefined;
  const setMode = (next: EditorMode) => {
    if (next === mode) return;
    // Carry the edits across when they are valid; otherwise the other view keeps its own text.
    if (next === 'json' && fromForm.args) setJson(JSON.stringify(fromForm.args, null, 2));
    if (next === 'form' && fromJson.ok) {
      setDrafts(Object.fromEntries(fields.map((f) => [f.name, draftOf(f.kind, fromJson.value[f.name])])));
    }
    setModeState(next);
  };
  return {
    mode,
    setMode,
    fields,
    drafts,
    setDraft: (name, draft) => setDrafts((d) => ({ ...d, [name]: draft })),
    json,
    setJson,
    problems: mode === 'form' ? fromForm.problems : {},
    jsonProblem: mode === 'json' && !fromJson.ok ? fromJson.message : undefined,
    edited,
    changes: edited ? changedMembers(proposed, edited) : {},
  };
}

/** One input per top-level argument, typed by its JSON type, or the whole arguments as JSON. */
export function ArgsEditor({ editor, idPrefix }: { editor: ArgsEditorState; idPrefix: string }) {
  const id = (name: string) => `${idPrefix}-${name.replace(/[^\w-]/g, '_')}`;
  return (
    <div className="args-editor">
      <div className="segmented" role="group" aria-label="Edit as">
        <button type="button" aria-pressed={editor.mode === 'form'} onClick={() => editor.setMode('form')}>
          Form
        </button>
        <button type="button" aria-pressed={editor.mode === 'json'} onClick={() => editor.setMode('json')}>
          JSON
        </button>
      </div>
      {editor.mode === 'json' ? (
        <div className="field">
          <label htmlFor={id('json')}>Arguments as JSON</label>
          <textarea
            id={id('json')}
            className="code"
            rows={Math.min(24, editor.json.split('\n').length + 1)}
            spellCheck={false}
            aria-invalid={editor.jsonProblem ? true : undefined}
            aria-describedby={editor.jsonProblem ? `${id('json')}-error` : undefined}
            value={editor.json}
            onChange={(e) => editor.setJson(e.target.value)}
          />
          {editor.jsonProblem && (
            <p className="field-error" id={`${id('json')}-error`}>
              {editor.jsonProblem}
            </p>
          )}
        </div>
      ) : (
        editor.fields.map((field) => {
          const inputId = id(field.name);
          const draft = editor.drafts[field.name] ?? '';
          const problem = editor.problems[field.name];
          const describedBy = [problem ? `${inputId}-error` : '', hintOf(field) ? `${inputId}-hint` : '']
            .filter(Boolean)
            .join(' ');
          const common = {
            id: inputId,
            'aria-invalid': problem ? true : undefined,
            'aria-describedby': describedBy || undefined,
          };
          return (
            <div className="field" key={field.name}>
              {field.kind === 'boolean' ? (
                <label className="checkbox" htmlFor={inputId}>
                  <input
                    {...common}
                    type="checkbox"
                    checked={draft === true}
                    onChange={(e) => editor.setDraft(field.name, e.target.checked)}
                  />
                  {field.name}
                </label>
              ) : (
                <label htmlFor={inputId}>{field.name}</label>
              )}
              {hintOf(field) && (
                <p className="field-hint" id={`${inputId}-hint`}>
                  {hintOf(field)}
                </p>
              )}
              {field.kind === 'text' && (
                <input
                  {...common}
                  value={String(draft)}
                  onChange={(e) => editor.setDraft(field.name, e.target.value)}
                />
              )}
              {field.kind === 'number' && (
                <input
                  {...common}
                  type="number"
                  step="any"
                  value={String(draft)}
                  onChange={(e) => editor.setDraft(field.name, e.target.value)}
                />
              )}
              {(field.kind === 'long-text' || field.kind === 'string-list' || field.kind === 'json') && (
                <textarea
                  {...common}
                  className={field.kind === 'json' ? 'code' : undefined}
                  rows={Math.min(16, String(draft).split('\n').length + 1)}
                  spellCheck={field.kind === 'long-text'}
                  value={String(draft)}
                  onChange={(e) => editor.setDraft(field.name, e.target.value)}
                />
              )}
              {problem && (
                <p className="field-error" id={`${inputId}-error`}>
                  {problem}
                </p>
              )}
            </div>
          );
        })
      )}
    </div>
  );
}

function hintOf(field: ArgField): string | undefined {
  if (field.kind === 'string-list') return 'One per line';
  if (field.kind === 'json') return 'JSON';
  return undefined;
}

/** What the edits change, member by member, against the agent's proposal. */
export function ArgsDiff({ proposed, changes }: { proposed: Args; changes: Args }) {
  const names = Object.keys(changes).filter((name) => name !== TOOL_MEMBER);
  if (names.length === 0) return <p className="muted">No changes yet: edit a value above.</p>;
  return (
    <ul className="diff" aria-label="Changes against the proposal">
      {names.map((name) => (
        <li key={name}>
          <span className="diff-name">{name}</span>
          <span className="visually-hidden">proposed: </span>
          <del>{name in proposed ? displayValue(proposed[name]) : '(not set)'}</del>
          <span className="visually-hidden">edited: </span>
          <ins>{displayValue(changes[name])}</ins>
        </li>
      ))}
    </ul>
  );
}
