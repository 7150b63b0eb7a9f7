import { describe, expect, it } from 'vitest';
import { contentTypeOf, fileProblem, formatBytes, MAX_BYTES, storageProblem } from './knowledge-upload.ts';

describe('knowledge files in the browser', () => {
  it("takes the browser's type when supported, else the extension's; refuses the rest", () => {
    expect(contentTypeOf({ name: 'a.pdf', type: 'application/pdf' })).toBe('application/pdf');
    expect(contentTypeOf({ name: 'Book.XLSX', type: '' })).toBe(
      'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
    );
    expect(contentTypeOf({ name: 'photo.jpg', type: 'image/pjpeg' })).toBe('image/jpeg');
    expect(contentTypeOf({ name: 'notes.txt', type: 'text/plain' })).toBeUndefined();
    expect(contentTypeOf({ name: 'noextension', type: '' })).toBeUndefined();
  });

  it('says why a file cannot go before anything is sent: its type, empty, over 25 MB', () => {
    expect(fileProblem({ name: 'a.pdf', type: 'application/pdf', size: 10 })).toBeUndefined();
    expect(fileProblem({ name: 'a.pdf', type: 'application/pdf', size: MAX_BYTES })).toBeUndefined();
    expect(fileProblem({ name: 'a.txt', type: 'text/plain', size: 10 })).toMatch(/is not a PDF/);
    expect(fileProblem({ name: 'a.pdf', type: 'application/pdf', size: 0 })).toBe('a.pdf is empty.');
    expect(fileProblem({ name: 'a.pdf', type: 'application/pdf', size: MAX_BYTES + 1 })).toBe(
      'a.pdf is 26.2 MB; the limit is 25 MB.',
    );
  });

  it('sizes in decimal units', () => {
    expect(formatBytes(512, 'en-US')).toBe('512 B');
    expect(formatBytes(48_213, 'en-US')).toBe('48.2 kB');
    expect(formatBytes(1_250_000, 'de-DE')).toBe('1,3 MB');
  });

  it("reads S3's error document as a sentence", () => {
    const error = (code: string, message: string) =>
      `<?xml version="1.0"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`;
    expect(
      storageProblem(403, error('AccessDenied', 'Invalid according to Policy: Policy expired.')),
    ).toMatch(/longer than its 15 minutes/);
    expect(storageProblem(400, error('EntityTooLarge', 'Your proposed upload exceeds the maximum'))).toBe(
      'The file is over the 25 MB limit.',
    );
    expect(storageProblem(403, error('SignatureDoesNotMatch', 'The signature &amp; policy differ'))).toBe(
      'The storage refused the file: The signature & policy differ',
    );
    expect(storageProblem(502, '<html>Bad gateway</html>')).toBe('The storage answered 502. Try again.');
  });
});
