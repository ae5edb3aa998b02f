/** The judge's rule over one ring's figures, without the database: its verdict and what the ring waits for. */
import { describe, expect, it } from 'vitest';
import { ringVerdict } from '../../api/rollouts/judge.ts';

const OPENED = '2026-11-28T09:00:00.000Z';
const limits = { soakSeconds: 600, maxFailureRatio: 0.1, minReportedRatio: 0.9 };
/** A ring whose devices are all live unless `members` says it has more (the rest stale). */
const judge = (converged: number, pending: number, failed: number, soaked = 0, accepted = 0, members?: number) =>
  ringVerdict({
    figures: {
      members: members ?? converged + pending + failed,
      converged,
      pending,
      failed,
      accepted_failures: accepted,
      opened_at: OPENED,
    },
    soaked,
    ...limits,
  });
const verdict = (...args: Parameters<typeof judge>) => judge(...args).verdict;

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
  ] as const)('%i converged, %i pending, %i failed, %i s soaked, %i accepted: %s', (c, p, f, s, a, expected) => {
    expect(verdict(c, p, f, s, a)).toBe(expected);
  });

  it('a ring none of whose devices is live waits for live devices, soaked or not', () => {
    for (const soaked of [0, 9999]) {
      expect(judge(0, 0, 0, soaked, 0, 3)).toEqual({
        verdict: 'wait',
        waitingFor: { reason: 'no_live_devices', reported: 0, needed: 0 },
      });
    }
  });

  it('an empty ring passes at once, without its soak', () => {
    expect(judge(0, 0, 0, 0, 0, 0)).toEqual({ verdict: 'pass', waitingFor: null });
  });

  it('counts only the live devices: stale ones neither report nor hold the ring back', () => {
    // 5 live of 40: all five reported, so the ring passes, the 35 stale ones notwithstanding.
    expect(judge(5, 0, 0, 600, 0, 40)).toEqual({ verdict: 'pass', waitingFor: null });
  });

  it('a ring short of reports waits, saying how many reported and how many it takes in all', () => {
    // 3 of 10: it takes ⌈0.9 × 10⌉ = 9.
    expect(judge(3, 7, 0, 600)).toEqual({ verdict: 'wait', waitingFor: { reason: 'reports', reported: 3, needed: 9 } });
    // A small ring takes min(5, live) at least, whatever the ratio: 2 of 3 with a ratio of 0.
    expect(
      ringVerdict({
        figures: { members: 3, converged: 2, pending: 1, failed: 0, accepted_failures: 0, opened_at: OPENED },
        soaked: 600,
        ...limits,
        minReportedRatio: 0,
      }),
    ).toEqual({ verdict: 'wait', waitingFor: { reason: 'reports', reported: 2, needed: 3 } });
    // 7 of 100 live with a ratio of 0.05: min(5, 100) = 5 wins over ⌈5⌉ = 5, and 7 is enough.
    expect(
      ringVerdict({
        figures: { members: 100, converged: 7, pending: 93, failed: 0, accepted_failures: 0, opened_at: OPENED },
        soaked: 600,
        ...limits,
        minReportedRatio: 0.05,
      }).verdict,
    ).toBe('pass');
    // 0.7 × 10 is 7.000000000000001 in floating point: seven reports are seven, not eight.
    expect(
      ringVerdict({
        figures: { members: 10, converged: 7, pending: 3, failed: 0, accepted_failures: 0, opened_at: OPENED },
        soaked: 600,
        ...limits,
        minReportedRatio: 0.7,
      }),
    ).toEqual({ verdict: 'pass', waitingFor: null });
  });

  it('during the soak says until when, before the reports', () => {
    expect(judge(1, 9, 0, 30)).toEqual({
      verdict: 'wait',
      waitingFor: { reason: 'soak', until: '2026-11-28T09:10:00.000Z', reported: 1, needed: 9 },
    });
  });

  it('a ring that meets every condition waits for nothing', () => {
    expect(judge(9, 1, 0, 600).waitingFor).toBeNull();
    // A ring about to pause still says what the next ring would wait for (after a resume).
    expect(judge(4, 5, 1, 0)).toEqual({ verdict: 'pause', waitingFor: expect.objectContaining({ reason: 'soak' }) });
  });
});
