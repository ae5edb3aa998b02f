/** The judge's rule over one ring's figures, without the database. */
import { describe, expect, it } from 'vitest';
import { ringVerdict } from '../../api/rollouts/judge.ts';

const limits = { soakSeconds: 600, maxFailureRatio: 0.1, minReportedRatio: 0.9 };
const verdict = (converged: number, pending: number, failed: number, soaked = 0, accepted = 0) =>
  ringVerdict({ figures: { converged, pending, failed, accepted_failures: accepted }, soaked, ...limits });

describe('ringVerdict', () => {
  it.each([
    // converged, pending, failed, soaked, accepted → verdict
    [4, 5, 1, 0, 0, 'pause'], // 1 of 5 reported: 0.2
    [3, 6, 1, 0, 0, 'wait'], // 4 reported < min(5, 10): too few to judge
    [1, 0, 1, 0, 0, 'pause'], // a ring of two: both reported, half failed
    [1, 1, 0, 9999, 0, 'wait'], // soaked, but half reported
    [9, 1, 0, 600, 0, 'pass'], // soaked, 0.9 reported, no failure
    [9, 1, 0, 599, 0, 'wait'], // a second short of the soak
    [18, 1, 1, 600, 0, 'pass'], // 1 of 19 failed: 0.053 within 0.1
    [8, 0, 2, 600, 0, 'pause'], // 2 of 10 failed
    [8, 0, 2, 600, 2, 'pass'], // the same two accepted by a resume
    [7, 0, 3, 600, 2, 'pass'], // one beyond the accepted: 1 of 10 is the ratio exactly, within it
    [6, 0, 4, 600, 2, 'pause'], // two beyond: 2 of 10
    [0, 0, 0, 0, 0, 'pass'], // no live device: passes at once, without soak
  ] as const)('%i converged, %i pending, %i failed, %i s soaked, %i accepted: %s', (c, p, f, s, a, expected) => {
    expect(verdict(c, p, f, s, a)).toBe(expected);
  });
});
