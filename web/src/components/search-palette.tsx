import { useEffect, useId, useMemo, useRef, useState, type KeyboardEvent } from 'react';
import { useApprovals } from '../approvals.tsx';
import { problemOf } from '../api.ts';
import { navigate } from '../router.tsx';
import {
  moveActive,
  resultPath,
  SEARCH_DEBOUNCE_MS,
  SEARCH_TYPES,
  searchQuery,
  TYPE_NAMES,
  type SearchResult,
} from '../search.ts';
import { useSignedIn } from '../session.tsx';
import './search-palette.css';

const isMac = typeof navigator !== 'undefined' && /Mac|iPhone|iPad/.test(navigator.platform);

/**
 * Global search: a button in the shell and Ctrl/⌘-K anywhere open a modal dialog (the browser's own
 * `<dialog>`: the rest of the page is inert, so focus stays inside, and focus returns to where it was)
 * with a combobox over `GET /api/search` (docs/search.md). Arrows move, Enter opens, Esc closes.
 */
export function SearchPalette() {
  const dialog = useRef<HTMLDialogElement>(null);
  const returnTo = useRef<HTMLElement | null>(null);
  const [open, setOpen] = useState(false);

  const show = () => {
    if (dialog.current?.open) return;
    returnTo.current = document.activeElement as HTMLElement | null;
    dialog.current?.showModal();
    setOpen(true);
  };
  const close = () => {
    dialog.current?.close();
  };

  useEffect(() => {
    const onKey = (event: globalThis.KeyboardEvent) => {
      if (event.key.toLowerCase() === 'k' && (event.ctrlKey || event.metaKey) && !event.altKey) {
        event.preventDefault();
        show();
      }
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);

  return (
    <>
      <button type="button" className="search-button" onClick={show} aria-keyshortcuts="Control+K Meta+K">
        <span aria-hidden="true">⌕</span> <span className="search-word">Search</span>
        <kbd aria-hidden="true">{isMac ? '⌘K' : 'Ctrl K'}</kbd>
      </button>
      <dialog
        ref={dialog}
        className="search-dialog"
        aria-labelledby="search-title"
        onClose={() => {
          setOpen(false);
          returnTo.current?.focus();
        }}
        onKeyDown={(event) => {
          // A modal dialog lets Tab leave for the browser's own controls; keep it going round inside.
          if (event.key !== 'Tab' || !dialog.current) return;
          const focusable = [...dialog.current.querySelectorAll<HTMLElement>('input, button')];
          const at = focusable.indexOf(document.activeElement as HTMLElement);
          const next = (at + (event.shiftKey ? -1 : 1) + focusable.length) % focusable.length;
          event.preventDefault();
          focusable[next]?.focus();
        }}
        onMouseDown={(event) => {
          // A click on the backdrop (the dialog element itself, outside its panel) closes it.
          if (event.target === dialog.current) close();
        }}
      >
        {open && <SearchPanel onDone={close} />}
      </dialog>
    </>
  );
}

type Results =
  | { status: 'idle' | 'loading' }
  | { status: 'ready'; items: SearchResult[]; query: string | undefined }
  | { status: 'error'; message: string };

function SearchPanel({ onDone }: { onDone: () => void }) {
  const { client, organization } = useSignedIn();
  const { items: pending } = useApprovals();
  const pendingUids = useMemo(() => new Set(pending.map((t) => t.uid)), [pending]);
  const [text, setText] = useState('');
  const [results, setResults] = useState<Results>({ status: 'loading' });
  const [active, setActive] = useState(-1);
  const listId = useId();
  const hintId = useId();
  const sequence = useRef(0);
  const query = searchQuery(text);

  useEffect(() => {
    const mine = ++sequence.current;
    // The first, empty, query (recent items) is sent at once; typing waits for a pause.
    const timer = window.setTimeout(
      () => {
        setResults((current) => (current.status === 'ready' ? current : { status: 'loading' }));
        client
          .GET('/api/search', {
            params: {
              query: {
                organization_uid: organization.organization_uid,
                types: SEARCH_TYPES.join(','),
                ...(query ? { mode: 'search', q: query } : { mode: 'suggest' }),
                limit: 12,
              },
            },
          })
          .then(
            ({ data }) => {
              if (mine !== sequence.current) return;
              setResults({ status: 'ready', items: data.data, query });
              setActive(data.data.length > 0 ? 0 : -1);
            },
            (error: unknown) => {
              if (mine === sequence.current) setResults({ status: 'error', message: problemOf(error) });
            },
          );
      },
      query === undefined && text === '' ? 0 : SEARCH_DEBOUNCE_MS,
    );
    return () => window.clearTimeout(timer);
    // `text` only matters through `query` (and whether it is empty).
  }, [client, organization.organization_uid, query, text === '']);

  const items = results.status === 'ready' ? results.items : [];
  const open = (result: SearchResult | undefined) => {
    const to = result && resultPath(result, pendingUids);
    if (!to) return;
    onDone();
    navigate(to);
  };

  const onKeyDown = (event: KeyboardEvent<HTMLInputElement>) => {
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault();
      setActive((a) => moveActive(a, event.key === 'ArrowDown' ? 1 : -1, items.length));
    } else if (event.key === 'Enter') {
      event.preventDefault();
      open(items[active]);
    } else if (event.key === 'Escape') {
      // Closes at once, whatever is typed (the dialog's own cancel may be held back by the browser).
      event.preventDefault();
      onDone();
    }
  };

  const optionId = (index: number) => `${listId}-option-${index}`;
  return (
    <div className="search-panel">
      <h2 id="search-title" className="visually-hidden">
        Search
      </h2>
      <input
        className="search-input"
        type="text"
        role="combobox"
        aria-label="Search invoices, tasks and knowledge"
        aria-expanded={items.length > 0}
        aria-controls={listId}
        aria-autocomplete="list"
        aria-activedescendant={active >= 0 && items[active] ? optionId(active) : undefined}
        aria-describedby={hintId}
        placeholder="Search invoices, tasks and knowledge…"
        autoComplete="off"
        spellCheck={false}
        // Focused when the dialog opens (showModal focuses the first focusable element).
        autoFocus
        value={text}
        onChange={(event) => setText(event.target.value)}
        onKeyDown={onKeyDown}
      />
      <div className="search-bar">
        <p id={hintId} className="search-hint">
          ↑ ↓ to move, Enter to open, Esc to close
        </p>
        <button type="button" className="link-button" onClick={onDone}>
          Close
        </button>
      </div>
      <p className="visually-hidden" role="status">
        {results.status === 'ready'
          ? `${results.items.length} ${results.items.length === 1 ? 'result' : 'results'}`
          : ''}
      </p>
      {results.status === 'error' && (
        <p className="search-state search-problem" role="alert">
          {results.message}
        </p>
      )}
      {results.status === 'loading' && <p className="search-state">Searching…</p>}
      {results.status === 'ready' && items.length === 0 && (
        <p className="search-state">
          {results.query ? `Nothing matches “${results.query}”.` : 'Nothing yet.'}
        </p>
      )}
      {results.status === 'ready' && items.length > 0 && (
        <p className="search-group" aria-hidden="true">
          {results.query ? 'Results' : 'Recent'}
        </p>
      )}
      <ul id={listId} role="listbox" aria-label="Results" className="search-results">
        {items.map((item, index) => (
          <li
            key={`${item.entity_type}:${item.entity_uid}`}
            id={optionId(index)}
            role="option"
            aria-selected={index === active}
            className="search-result"
            onMouseMove={() => setActive(index)}
            onClick={() => open(item)}
          >
            <span className="search-type">{TYPE_NAMES[item.entity_type] ?? item.entity_type}</span>
            <span className="search-label">{item.label}</span>
            {item.subtitle && <span className="search-subtitle">{item.subtitle}</span>}
          </li>
        ))}
      </ul>
    </div>
  );
}
