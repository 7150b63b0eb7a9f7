import { describe, expect, it } from 'vitest';
import {
  allowedActions,
  fromLocalInput,
  isInFlight,
  parseAddresses,
  previewDocument,
  readCollectionFilters,
  statusLabel,
  tabOf,
  tabQuery,
  toLocalInput,
  tomorrowAt,
  type EmailStatus,
} from './collections.ts';

const email = (status: EmailStatus, planned: string | null = null) => ({ status, planned_send_at: planned });

describe('tabs', () => {
  it('each tab is one list query; every email lands in the tab tabOf names', () => {
    expect(tabQuery('drafts')).toEqual({ status: 'draft,failed', scheduled: false, sort: '-updated_at' });
    expect(tabQuery('scheduled')).toEqual({ scheduled: true, sort: 'planned_send_at' });
    expect(tabQuery('sent')).toEqual({ status: 'sending,sent', sort: '-updated_at' });
    expect(tabQuery('canceled')).toEqual({ status: 'canceled', sort: '-updated_at' });
    const at = '2026-11-27T08:00:00.000Z';
    expect(tabOf(email('draft'))).toBe('drafts');
    expect(tabOf(email('draft', at))).toBe('scheduled');
    expect(tabOf(email('failed', at))).toBe('drafts');
    expect(tabOf(email('sending', at))).toBe('sent');
    expect(tabOf(email('sent', at))).toBe('sent');
    expect(tabOf(email('canceled', at))).toBe('canceled');
  });

  it('labels a draft with a time "Scheduled"', () => {
    expect(statusLabel(email('draft'))).toBe('Draft');
    expect(statusLabel(email('draft', '2026-11-27T08:00:00Z'))).toBe('Scheduled');
    expect(statusLabel(email('failed', '2026-11-27T08:00:00Z'))).toBe('Failed');
  });

  it('reads the search and the page from the address bar, dropping what the route would refuse', () => {
    expect(readCollectionFilters(new URLSearchParams('q=globex&page=3'))).toEqual({ q: 'globex', page: 3 });
    expect(readCollectionFilters(new URLSearchParams('page=0'))).toEqual({ q: '', page: 1 });
    expect(readCollectionFilters(new URLSearchParams('page=1.5'))).toEqual({ q: '', page: 1 });
    expect(readCollectionFilters(new URLSearchParams(`q=${'x'.repeat(300)}`)).q).toHaveLength(200);
  });
});

describe('what a status allows', () => {
  it('drafts and failed emails can be edited, scheduled, sent and canceled; the rest nothing', () => {
    expect(allowedActions(email('draft'))).toEqual({
      edit: true,
      schedule: true,
      unschedule: false,
      sendNow: true,
      cancel: true,
    });
    expect(allowedActions(email('draft', '2026-11-27T08:00:00Z')).unschedule).toBe(true);
    expect(allowedActions(email('failed', '2026-11-27T08:00:00Z'))).toMatchObject({
      edit: true,
      sendNow: true,
      unschedule: false,
    });
    for (const status of ['sending', 'sent', 'canceled'] as const) {
      expect(Object.values(allowedActions(email(status, '2026-11-27T08:00:00Z')))).toEqual([
        false,
        false,
        false,
        false,
        false,
      ]);
    }
  });

  it('is in flight while sending, or while a draft is due', () => {
    const now = Date.parse('2026-11-27T08:00:00Z');
    expect(isInFlight(email('sending'), now)).toBe(true);
    expect(isInFlight(email('draft', '2026-11-27T07:59:59Z'), now)).toBe(true);
    expect(isInFlight(email('draft', '2026-11-27T08:00:01Z'), now)).toBe(false);
    expect(isInFlight(email('draft'), now)).toBe(false);
    expect(isInFlight(email('failed', '2026-11-27T07:00:00Z'), now)).toBe(false);
  });
});

describe('recipients as text', () => {
  it('splits on commas, semicolons and lines; refuses what is not an address', () => {
    expect(parseAddresses(' ap@globex.test,\nhank@globex.test ; ; ')).toEqual({
      addresses: ['ap@globex.test', 'hank@globex.test'],
    });
    expect(parseAddresses('')).toEqual({ addresses: [] });
    expect(parseAddresses('ap@globex.test, Hank, x@').problem).toBe('Not email addresses: Hank, x@');
    expect(parseAddresses('a b@globex.test').problem).toBe('Not an email address: a b@globex.test');
    const many = Array.from({ length: 101 }, (_, i) => `p${i}@globex.test`).join(',');
    expect(parseAddresses(many).problem).toBe('At most 100 addresses.');
  });
});

describe('the send time in the person’s time zone', () => {
  it('reads a datetime-local value in the zone, winter and summer, as UTC', () => {
    expect(fromLocalInput('2026-11-27T09:00', 'Europe/Berlin')).toBe('2026-11-27T08:00:00.000Z');
    expect(fromLocalInput('2026-07-01T09:00', 'Europe/Berlin')).toBe('2026-07-01T07:00:00.000Z');
    expect(fromLocalInput('2026-11-27T09:00', 'America/New_York')).toBe('2026-11-27T14:00:00.000Z');
    expect(fromLocalInput('2026-11-27T09:00', 'UTC')).toBe('2026-11-27T09:00:00.000Z');
    expect(fromLocalInput('2026-11-27', 'UTC')).toBeUndefined();
    expect(fromLocalInput('2026-13-01T09:00', 'UTC')).toBeUndefined();
    expect(fromLocalInput('', 'UTC')).toBeUndefined();
  });

  it('shows an instant as the zone’s wall clock, and back', () => {
    expect(toLocalInput('2026-11-27T08:00:00.000Z', 'Europe/Berlin')).toBe('2026-11-27T09:00');
    expect(toLocalInput('2026-07-01T22:30:00.000Z', 'Europe/Berlin')).toBe('2026-07-02T00:30');
    const iso = '2026-03-29T00:59:00.000Z';
    expect(fromLocalInput(toLocalInput(iso, 'Europe/Berlin'), 'Europe/Berlin')).toBe(iso);
  });

  it('suggests tomorrow at 09:00 there, across a month’s end', () => {
    expect(tomorrowAt(9, Date.parse('2026-11-30T23:30:00Z'), 'Europe/Berlin')).toBe('2026-12-02T09:00');
    expect(tomorrowAt(9, Date.parse('2026-11-30T23:30:00Z'), 'UTC')).toBe('2026-12-01T09:00');
  });
});

describe('the preview document', () => {
  it('keeps the HTML as saved, behind a policy of its own (after a doctype)', () => {
    const doc = previewDocument({ body_html: '<p>Hi <b>there</b></p>', body_text: 'Hi there' });
    expect(doc).toBe(
      `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:"><base target="_blank"><p>Hi <b>there</b></p>`,
    );
    const full = previewDocument({ body_html: '<!DOCTYPE html><html><body>x</body></html>', body_text: '' });
    expect(full.startsWith('<!DOCTYPE html><meta http-equiv="Content-Security-Policy"')).toBe(true);
    expect(full.endsWith('<html><body>x</body></html>')).toBe(true);
  });

  it('shows the text escaped, with its line breaks and spaces, when there is no HTML', () => {
    const doc = previewDocument({ body_html: ' ', body_text: 'Dear <b>Hank</b> & co,\r\n\nPay  now.' });
    expect(doc).toContain('<body>Dear &lt;b&gt;Hank&lt;/b&gt; &amp; co,<br>\n<br>\nPay &nbsp;now.</body>');
    expect(doc).toContain(`content="default-src 'none'; img-src data:"`);
  });
});
