import { describe, expect, it } from 'vitest';
import { describeSeedProblem, shorten } from '../../src/admin/seed-problems.js';
import { validateDocument } from '../../src/admin/seed-validate.js';

/** The lines `qwn seed` prints for a document, from the real validator. */
function lines(doc: { subscribers: unknown[] }): string[] {
  return validateDocument(doc).problems.map((p) => describeSeedProblem(doc, p));
}

/** 499 good subscribers around the one an admin has to find. */
function fileOf500(bad: Record<string, unknown>, at: number) {
  const subscribers: unknown[] = Array.from({ length: 500 }, (_, i) => ({
    name: `Desk ${i}`,
    email: `desk${i}@example.com`,
    locations: ['101210101'],
  }));
  subscribers[at] = bad;
  return { subscribers };
}

describe('seed problems as printed', () => {
  it('names the subscriber and quotes the bad value', () => {
    const doc = fileOf500(
      { name: 'Pudong Desk', email: 'pudong@@example', locations: ['101020600'] },
      5,
    );
    expect(lines(doc)).toEqual([
      'subscribers[5].email (Pudong Desk): must be one email address (one @, a dotted domain, none of , ; < > " or spaces); got "pudong@@example"',
    ]);
  });

  it('falls back to the address when the subscriber has no name', () => {
    const doc = fileOf500(
      { email: 'ops@example.com', lang: 'fr', minLevel: 'purple', locations: ['101020600'] },
      7,
    );
    const printed = lines(doc);
    expect(printed[0]).toBe(
      'subscribers[7].lang (ops@example.com): must be "zh" or "en"; got "fr"',
    );
    expect(printed[1]).toMatch(
      /^subscribers\[7\]\.minLevel \(ops@example\.com\): .*; got "purple"$/,
    );
  });

  it('quotes numbers and nested entries by their own path', () => {
    const doc = {
      subscribers: [
        {
          name: 'Harbour',
          email: 'h@example.com',
          locations: [101020600, { query: '朝阳', range: 'china' }],
        },
      ],
    };
    expect(lines(doc)).toEqual([
      'subscribers[0].locations[0] (Harbour): write it as a string ("101020600"): numbers lose leading zeros and digits',
      'subscribers[0].locations[1].range (Harbour): must be "world" or a 2-letter ISO 3166 country code; got "china"',
    ]);
  });

  it('shortens a long value', () => {
    const long = `${'x'.repeat(300)}@`;
    const [line] = lines({
      subscribers: [{ name: 'Long', email: long, locations: ['101020600'] }],
    });
    expect(line).toContain(`; got "${'x'.repeat(59)}…"`);
    expect(line!.length).toBeLessThan(200);
    expect(shorten('a\n  b')).toBe('a b');
  });

  it('never repeats a secret or the credentials of a webhook URL', () => {
    const secret = 'whsec_not-base64-but-private!';
    const printed = lines({
      subscribers: [
        { name: 'Robot', webhook: 'https://hooks.example.com/q', secret, locations: ['101020600'] },
        { webhook: 'https://bot:pa55word@hooks.example.com/q', locations: ['101020600'] },
      ],
    });
    expect(printed[0]).toMatch(/^subscribers\[0\]\.secret \(Robot\): must be "whsec_" followed by/);
    expect(printed[1]).toMatch(
      /^subscribers\[1\]\.webhook \(https:\/\/\[redacted\]@hooks\.example\.com\/q\): must not embed credentials/,
    );
    expect(printed.join('\n')).not.toMatch(/private!|pa55word/);
  });

  it('leaves document-level problems as they were', () => {
    const doc = { subscribers: [], extra: 1 };
    expect(validateDocument(doc).problems.map((p) => describeSeedProblem(doc, p))).toEqual([
      'extra: is not a known field',
    ]);
  });
});
