import { describe, expect, it } from 'vitest';
import {
  changedMembers,
  draftOf,
  fieldsOf,
  kindOf,
  parseArgsJson,
  parseDraft,
  sameValue,
} from './tool-args.ts';

describe('tool arguments as a form', () => {
  const proposed = {
    type: 'send_email',
    body: 'Dear Hank,\n\nPlease pay.',
    subject: 'Reminder',
    recipients: ['ap@globex.test'],
    amount_cents: 3900,
    attach_pdf: true,
    options: { tone: 'firm' },
    cc: null,
  };

  it('one field per member but the tool, typed by its JSON value, short ones first', () => {
    expect(fieldsOf(proposed).map((f) => [f.name, f.kind])).toEqual([
      ['subject', 'text'],
      ['recipients', 'string-list'],
      ['amount_cents', 'number'],
      ['attach_pdf', 'boolean'],
      ['body', 'long-text'],
      ['options', 'json'],
      ['cc', 'json'],
    ]);
    expect(kindOf('x'.repeat(81))).toBe('long-text');
    expect(kindOf([1, 'a'])).toBe('json');
  });

  it('each input reads back to a value of its type', () => {
    expect(parseDraft('number', draftOf('number', 3900))).toEqual({ ok: true, value: 3900 });
    expect(parseDraft('number', '12.5')).toEqual({ ok: true, value: 12.5 });
    expect(parseDraft('number', 'twelve')).toMatchObject({ ok: false });
    expect(parseDraft('number', '')).toMatchObject({ ok: false });
    expect(parseDraft('string-list', 'a@x.test\n\n b@x.test ')).toEqual({
      ok: true,
      value: ['a@x.test', 'b@x.test'],
    });
    expect(parseDraft('boolean', false)).toEqual({ ok: true, value: false });
    expect(parseDraft('json', draftOf('json', { tone: 'firm' }))).toEqual({
      ok: true,
      value: { tone: 'firm' },
    });
    expect(parseDraft('json', '{')).toMatchObject({ ok: false });
  });

  it('an approval sends only the members that changed (the service merges them over the rest)', () => {
    const edited = {
      ...proposed,
      subject: 'Second reminder',
      options: { tone: 'firm' },
      recipients: ['ap@globex.test'],
    };
    expect(changedMembers(proposed, edited)).toEqual({ subject: 'Second reminder' });
    expect(changedMembers(proposed, { ...proposed, cc: ['boss@acme.test'] })).toEqual({
      cc: ['boss@acme.test'],
    });
    expect(sameValue({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 })).toBe(true);
    expect(sameValue([1, 2], [2, 1])).toBe(false);
  });
});

describe('tool arguments as JSON text', () => {
  const proposed = { type: 'refund', order: '1042', amount_cents: 3900 };

  it('takes an object with every member, edited or added', () => {
    expect(
      parseArgsJson('{"type":"refund","order":"1042","amount_cents":2500,"memo":"half"}', proposed),
    ).toEqual({
      ok: true,
      value: { type: 'refund', order: '1042', amount_cents: 2500, memo: 'half' },
    });
  });

  it('refuses what the service cannot do: removing a member, changing the tool, not an object', () => {
    expect(parseArgsJson('{"type":"refund","order":"1042"}', proposed)).toMatchObject({
      ok: false,
      message: expect.stringContaining('"amount_cents" cannot be removed') as unknown,
    });
    expect(parseArgsJson('{"type":"charge","order":"1042","amount_cents":1}', proposed)).toMatchObject({
      ok: false,
      message: expect.stringContaining('names the tool') as unknown,
    });
    expect(parseArgsJson('[1]', proposed)).toMatchObject({ ok: false });
    expect(parseArgsJson('{"type":', proposed)).toMatchObject({ ok: false });
  });
});
