import { useEffect, useId, useRef, useState, type ReactNode } from 'react';
import { problemOf } from '../../api.ts';

/**
 * A button whose action needs a second thought (revoke a key, remove a member): it opens a modal
 * `<dialog>` (the page behind is inert; Esc or **Cancel** closes it and focus returns to the button)
 * that says what will happen, with **Cancel** focused first so a stray Enter does nothing. The action's
 * error is said inside the dialog, which stays open.
 */
export function ConfirmButton({
  label,
  accessibleName,
  title,
  children,
  confirmLabel,
  onConfirm,
  className = 'button button-danger',
}: {
  /** The button's text. */
  label: string;
  /** The button's name when its text alone is ambiguous in a list ("Revoke" → "Revoke the key Reporting"). */
  accessibleName?: string;
  title: string;
  /** What will happen, in a sentence or two. */
  children: ReactNode;
  confirmLabel: string;
  /**
   * The action. It may answer what to do once the dialog has closed (and focus is back on the button):
   * say the outcome, move focus where the page goes on when the button is gone with its row.
   */
  onConfirm: () => Promise<void | (() => void)>;
  className?: string;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const cancel = useRef<HTMLButtonElement>(null);
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string>();
  const titleId = useId();
  const bodyId = useId();

  useEffect(() => {
    if (!open || dialog.current?.open) return;
    dialog.current?.showModal();
    cancel.current?.focus();
  }, [open]);

  const confirm = async () => {
    setBusy(true);
    setProblem(undefined);
    try {
      const after = await onConfirm();
      dialog.current?.close();
      if (after) after();
    } catch (error) {
      setProblem(problemOf(error));
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      <button type="button" className={className} aria-label={accessibleName} onClick={() => setOpen(true)}>
        {label}
      </button>
      {open && (
        <dialog
          ref={dialog}
          className="confirm-dialog"
          role="alertdialog"
          aria-labelledby={titleId}
          aria-describedby={bodyId}
          onClose={() => {
            setOpen(false);
            setProblem(undefined);
          }}
        >
          <h2 id={titleId}>{title}</h2>
          <div id={bodyId}>{children}</div>
          {problem && (
            <p className="form-problem" role="alert">
              {problem}
            </p>
          )}
          <div className="confirm-actions">
            <button ref={cancel} type="button" className="button" onClick={() => dialog.current?.close()}>
              Cancel
            </button>
            <button
              type="button"
              className="button button-danger-solid"
              disabled={busy}
              onClick={() => void confirm()}
            >
              {busy ? 'Working…' : confirmLabel}
            </button>
          </div>
        </dialog>
      )}
    </>
  );
}
