/**
 * The agent's proposed action (`tool_args`) as something a person can edit: one field per top-level
 * member, typed by its JSON value, and the edits as the API takes them — only the members that changed,
 * merged shallowly over the agent's by the service (docs/work-tasks.md#resolving-it).
 */

export type Args = Record<string, unknown>;

/** How a member is edited. */
export type ArgKind = 'text' | 'long-text' | 'number' | 'boolean' | 'string-list' | 'json';

/** `type` names the tool: it is what the agent asks to do, not an argument of it. */
export const TOOL_MEMBER = 'type';

export interface ArgField {
  name: string;
  kind: ArgKind;
  /** The agent's value. */
  proposed: unknown;
}

export function kindOf(value: unknown): ArgKind {
  if (typeof value === 'string') return value.includes('\n') || value.length > 80 ? 'long-text' : 'text';
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'boolean';
  if (Array.isArray(value) && value.every((item) => typeof item === 'string')) return 'string-list';
  // null, objects, mixed arrays: JSON text.
  return 'json';
}

/** Short values first, long text and JSON last: stored arguments come back in no meaningful order. */
const KIND_ORDER: Record<ArgKind, number> = {
  'string-list': 0,
  text: 0,
  number: 0,
  boolean: 0,
  'long-text': 1,
  json: 2,
};

export function fieldsOf(args: Args): ArgField[] {
  return Object.entries(args)
    .filter(([name]) => name !== TOOL_MEMBER)
    .map(([name, proposed]) => ({ name, kind: kindOf(proposed), proposed }))
    .sort((a, b) => KIND_ORDER[a.kind] - KIND_ORDER[b.kind]);
}

/** What an input shows for a value: a checkbox's boolean, or text. */
export type Draft = string | boolean;

export function draftOf(kind: ArgKind, value: unknown): Draft {
  switch (kind) {
    case 'boolean':
      return value === true;
    case 'text':
    case 'long-text':
      return typeof value === 'string' ? value : JSON.stringify(value);
    case 'number':
      return typeof value === 'number' ? String(value) : '';
    case 'string-list':
      return Array.isArray(value) ? value.join('\n') : '';
    case 'json':
      return JSON.stringify(value, null, 2);
  }
}

export type Parsed = { ok: true; value: unknown } | { ok: false; message: string };

export function parseDraft(kind: ArgKind, draft: Draft): Parsed {
  switch (kind) {
    case 'boolean':
      return { ok: true, value: draft === true };
    case 'text':
    case 'long-text':
      return { ok: true, value: String(draft) };
    case 'number': {
      const text = String(draft).trim();
      const value = Number(text);
      if (text === '' || !Number.isFinite(value)) return { ok: false, message: 'Enter a number' };
      return { ok: true, value };
    }
    case 'string-list':
      return {
        ok: true,
        value: String(draft)
          .split('\n')
          .map((line) => line.trim())
          .filter((line) => line !== ''),
      };
    case 'json':
      try {
        return { ok: true, value: JSON.parse(String(draft)) as unknown };
      } catch {
        return { ok: false, message: 'Enter valid JSON' };
      }
  }
}

/** JSON equality of two JSON values (member order of objects ignored). */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((item, i) => sameValue(item, b[i]));
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  const bb = b as Args;
  return ka.length === kb.length && ka.every((k) => k in bb && sameValue((a as Args)[k], bb[k]));
}

/** The members of `edited` that differ from `proposed`: the `tool_args` an approval sends. */
export function changedMembers(proposed: Args, edited: Args): Args {
  const changes: Args = {};
  for (const [name, value] of Object.entries(edited)) {
    if (!sameValue(proposed[name], value)) changes[name] = value;
  }
  return changes;
}

/**
 * The whole arguments typed as JSON text. The service merges edits over the agent's members, so a member
 * cannot be removed (it can be set to null), and the tool itself is not the reviewer's to change.
 */
export function parseArgsJson(
  text: string,
  proposed: Args,
): { ok: true; value: Args } | { ok: false; message: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return {
      ok: false,
      message: `Not valid JSON: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, message: 'The arguments are a JSON object: { "name": value, … }' };
  }
  const args = value as Args;
  const removed = Object.keys(proposed).filter((name) => !(name in args));
  if (removed.length > 0) {
    return {
      ok: false,
      message: `${removed.map((n) => `"${n}"`).join(', ')} cannot be removed, only changed (set it to null to clear it)`,
    };
  }
  if (TOOL_MEMBER in proposed && !sameValue(args[TOOL_MEMBER], proposed[TOOL_MEMBER])) {
    return { ok: false, message: `"${TOOL_MEMBER}" names the tool and cannot be changed: reject instead` };
  }
  return { ok: true, value: args };
}

/** A value as a person reads it in a diff or a summary: strings as they are, the rest as JSON. */
export function displayValue(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.every((item) => typeof item === 'string')) return value.join(', ');
  return JSON.stringify(value, null, 2);
}
