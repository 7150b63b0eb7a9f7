import { formatAgo, formatDateTime } from '../format.ts';

/** "3 hours ago", with the exact time in the person's time zone on hover and for machines. */
export function Ago({ at }: { at: string }) {
  return (
    <time dateTime={at} title={formatDateTime(at)}>
      {formatAgo(at)}
    </time>
  );
}
