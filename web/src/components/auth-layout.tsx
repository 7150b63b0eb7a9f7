import type { ReactNode } from 'react';
import { useDocumentTitle } from './states.tsx';

/** The pages before signing in: one card, one heading, one form. */
export function AuthLayout({ title, children }: { title: string; children: ReactNode }) {
  useDocumentTitle(title);
  return (
    <main className="auth" id="main">
      <div className="auth-card">
        <p className="auth-brand" aria-hidden="true">
          Remit
        </p>
        <h1>{title}</h1>
        {children}
      </div>
    </main>
  );
}

/** A field with its label, hint and error tied to it for assistive technology. */
export function Field({
  id,
  label,
  hint,
  error,
  children,
}: {
  id: string;
  label: string;
  hint?: string | undefined;
  error?: string | undefined;
  children: ReactNode;
}) {
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {hint && (
        <p className="field-hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
      {children}
      {error && (
        <p className="field-error" id={`${id}-error`}>
          {error}
        </p>
      )}
    </div>
  );
}

/** `aria-describedby` for an input inside `Field`. */
export function describedBy(id: string, hint?: string, error?: string): string | undefined {
  const ids = [hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean);
  return ids.length > 0 ? ids.join(' ') : undefined;
}

export function FormProblem({ message }: { message: string | undefined }) {
  if (!message) return null;
  return (
    <p className="form-problem" role="alert">
      {message}
    </p>
  );
}

export function Notice({ message }: { message: string | undefined }) {
  if (!message) return null;
  return (
    <p className="form-notice" role="status">
      {message}
    </p>
  );
}

/** The account's email address, as sign-in and the reset request ask for it (filled by password managers). */
export function EmailField({ value, onChange }: { value: string; onChange: (value: string) => void }) {
  return (
    <Field id="email" label="Email">
      <input
        id="email"
        type="email"
        autoComplete="username"
        required
        value={value}
        onChange={(e) => onChange(e.target.value)}
      />
    </Field>
  );
}
