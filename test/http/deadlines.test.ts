/**
 * Deadlines of one length on one timer (the request's database budget, a replica read's
 * time): each promise gets its own outcome or its own expiry, in the order they were set,
 * and one that settled is never expired.
 */
import { describe, expect, it } from 'vitest';
import { Deadlines } from '../../api/http/deadlines.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const never = () => new Promise<never>(() => {});

class Expired extends Error {}

/** Whether the promise has settled, and how. */
function outcome<T>(promise: Promise<T>) {
  const seen: { state: 'pending' | 'resolved' | 'rejected'; value?: unknown } = { state: 'pending' };
  promise.then(
    (value) => Object.assign(seen, { state: 'resolved', value }),
    (value) => Object.assign(seen, { state: 'rejected', value }),
  );
  return seen;
}

describe('Deadlines', () => {
  it("passes a promise's value and error through when it settles in time", async () => {
    const deadlines = new Deadlines(1000);
    expect(await deadlines.within(Promise.resolve(7), () => new Expired())).toBe(7);
    const failure = new Error('the query failed');
    await expect(deadlines.within(Promise.reject(failure), () => new Expired())).rejects.toBe(failure);
  });

  it('expires each unsettled promise once its own time is up, and none that settled', async () => {
    const deadlines = new Deadlines(400);
    const first = deadlines.within(never(), () => new Expired('first'));
    let settle!: (value: string) => void;
    const middle = outcome(deadlines.within(new Promise<string>((r) => (settle = r)), () => new Expired('middle')));
    await sleep(200);
    const later = deadlines.within(never(), () => new Expired('later'));
    const laterSeen = outcome(later);
    settle('in time');
    await expect(first).rejects.toThrow('first');
    // The later one has 200 ms to go.
    expect(laterSeen.state).toBe('pending');
    expect(middle).toEqual({ state: 'resolved', value: 'in time' });
    await expect(later).rejects.toThrow('later');
    expect(middle.state).toBe('resolved');
  });

  it('serves deadlines set after the list ran empty', async () => {
    const deadlines = new Deadlines(30);
    await expect(deadlines.within(never(), () => new Expired('one'))).rejects.toThrow('one');
    expect(await deadlines.within(Promise.resolve('two'), () => new Expired())).toBe('two');
    await sleep(50);
    await expect(deadlines.within(never(), () => new Expired('three'))).rejects.toThrow('three');
  });
});
