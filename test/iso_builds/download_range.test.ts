/** The Range rules of the ISO download (pure). */
import { describe, expect, it } from 'vitest';
import { decideRange } from '../../api/iso_builds/download.ts';

const etag = '"abc"';
const size = 1000;

describe('decideRange', () => {
  it.each([
    ['bytes=0-99', { kind: 'partial', start: 0, end: 99 }],
    ['bytes=990-', { kind: 'partial', start: 990, end: 999 }],
    ['bytes=990-5000', { kind: 'partial', start: 990, end: 999 }],
    ['bytes=-10', { kind: 'partial', start: 990, end: 999 }],
    ['bytes=-5000', { kind: 'partial', start: 0, end: 999 }],
    ['bytes=999-999', { kind: 'partial', start: 999, end: 999 }],
    [' bytes=1-2 ', { kind: 'partial', start: 1, end: 2 }],
    ['bytes=1000-', { kind: 'unsatisfiable' }],
    ['bytes=1000-2000', { kind: 'unsatisfiable' }],
    ['bytes=-0', { kind: 'unsatisfiable' }],
    ['bytes=5-1', { kind: 'full' }],
    ['bytes=-', { kind: 'full' }],
    ['bytes=0-1,5-6', { kind: 'full' }],
    ['items=0-1', { kind: 'full' }],
    ['bytes=a-b', { kind: 'full' }],
    ['bytes=99999999999999999999-', { kind: 'full' }],
  ])('%s → %o', (range, expected) => {
    expect(decideRange(range, undefined, etag, size)).toEqual(expected);
  });

  it('sends the whole file without a Range', () => {
    expect(decideRange(undefined, undefined, etag, size)).toEqual({ kind: 'full' });
  });

  it('honours the range only when If-Range is the current ETag', () => {
    expect(decideRange('bytes=0-9', etag, etag, size)).toEqual({ kind: 'partial', start: 0, end: 9 });
    expect(decideRange('bytes=0-9', '"other"', etag, size)).toEqual({ kind: 'full' });
    expect(decideRange('bytes=0-9', 'Sat, 21 Nov 2026 13:00:00 GMT', etag, size)).toEqual({ kind: 'full' });
  });

  it('has nothing to give from an empty file', () => {
    expect(decideRange('bytes=-5', undefined, etag, 0)).toEqual({ kind: 'unsatisfiable' });
    expect(decideRange('bytes=0-', undefined, etag, 0)).toEqual({ kind: 'unsatisfiable' });
  });
});
