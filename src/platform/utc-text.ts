/** "2026-11-26 10:03 UTC": how people read a time in a message, an email or an error (never raw ISO). */
export function utcText(at: Date): string {
  return `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}
