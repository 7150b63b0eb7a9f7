/**
 * Pure helpers of the people settings (your account, API keys, members): what a session's browser is,
 * how a TOTP secret is read out, a key's state, the password rules the API applies, and the QR code's
 * drawing. Unit-tested beside (settings-people.test.ts).
 */

/** The API's password rules (src/modules/people/passwords.ts), said before a request is made. */
export const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 256;
export const PASSWORD_RULES = `${PASSWORD_MIN} to ${PASSWORD_MAX} characters, and not your email address. A few unrelated words make a long password that is easy to remember.`;

/** Why the API would refuse `password` as a new password, as a sentence; undefined when it would take it. */
export function passwordProblem(password: string, email: string): string | undefined {
  const length = [...password].length;
  if (length < PASSWORD_MIN) return `The new password needs at least ${PASSWORD_MIN} characters.`;
  if (length > PASSWORD_MAX) return `The new password can have at most ${PASSWORD_MAX} characters.`;
  if (password.trim().toLowerCase() === email.trim().toLowerCase())
    return 'The new password must not be your email address.';
  return undefined;
}

/** A base32 TOTP secret in groups of four, as people type it into an authenticator app by hand. */
export function groupSecret(secret: string): string {
  return (secret.replace(/\s+/g, '').match(/.{1,4}/g) ?? []).join(' ');
}

/** A typed authentication code without its spaces (apps show `123 456`); undefined unless six digits. */
export function totpCodeOf(typed: string): string | undefined {
  const code = typed.replace(/[\s-]+/g, '');
  return /^\d{6}$/.test(code) ? code : undefined;
}

const BROWSERS: [RegExp, string][] = [
  [/Edg(?:e|A|iOS)?\/(\d+)/, 'Edge'],
  [/OPR\/(\d+)/, 'Opera'],
  [/SamsungBrowser\/(\d+)/, 'Samsung Internet'],
  [/Firefox\/(\d+)/, 'Firefox'],
  [/FxiOS\/(\d+)/, 'Firefox'],
  [/HeadlessChrome\/(\d+)/, 'Headless Chrome'],
  [/CriOS\/(\d+)/, 'Chrome'],
  [/Chrome\/(\d+)/, 'Chrome'],
  [/Version\/(\d+)[\d.]* (?:Mobile\/\S+ )?Safari\//, 'Safari'],
];

const SYSTEMS: [RegExp, string][] = [
  [/iPhone/, 'iPhone'],
  [/iPad/, 'iPad'],
  [/Android/, 'Android'],
  [/CrOS/, 'ChromeOS'],
  [/Windows/, 'Windows'],
  [/Mac OS X|Macintosh/, 'macOS'],
  [/Linux/, 'Linux'],
];

/**
 * A session's user agent as a person reads it: `Chrome 131 on macOS`, `Firefox 133 on Windows`. A
 * program's own agent (`curl/8.5.0`, `node`) is shown as it is; none at all is "Unknown browser".
 */
export function describeUserAgent(userAgent: string | null): string {
  const agent = userAgent?.trim() ?? '';
  if (!agent) return 'Unknown browser';
  const system = SYSTEMS.find(([pattern]) => pattern.test(agent))?.[1];
  for (const [pattern, name] of BROWSERS) {
    const match = pattern.exec(agent);
    if (match) return `${name} ${match[1]}${system ? ` on ${system}` : ''}`;
  }
  if (system) return `A browser on ${system}`;
  // Not a browser: the program's own name and version, kept short.
  return agent.length > 60 ? `${agent.slice(0, 59)}…` : agent;
}

/** How a session was opened, in words. */
export const SESSION_METHODS: Record<string, string> = {
  password: 'Password',
  sign_in_link: 'Emailed link',
  invitation: 'Invitation',
};

/** The day of an instant in the person's time zone (`Dec 26, 2026`): a key's expiry, where the hour is noise. */
export function formatDay(iso: string, locale?: string, timeZone?: string): string {
  return new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeZone }).format(new Date(iso));
}

export type KeyStatus = 'active' | 'expired' | 'revoked';

/** A key's state as the API judges it: revoked, else expired once `expires_at` has passed, else active. */
export function keyStatus(
  key: { revoked_at: string | null; expires_at: string | null },
  now: number = Date.now(),
): KeyStatus {
  if (key.revoked_at) return 'revoked';
  if (key.expires_at && Date.parse(key.expires_at) <= now) return 'expired';
  return 'active';
}

/**
 * The dark modules of a QR code as one SVG path (a 1×1 square per module, offset by the quiet zone),
 * so the code is drawn by the page itself: no image to fetch, nothing inline for the CSP to refuse.
 */
export function qrPath(size: number, isDark: (row: number, column: number) => boolean, margin = 4): string {
  const parts: string[] = [];
  for (let row = 0; row < size; row++) {
    for (let column = 0; column < size; column++) {
      if (isDark(row, column)) parts.push(`M${column + margin} ${row + margin}h1v1h-1z`);
    }
  }
  return parts.join('');
}
