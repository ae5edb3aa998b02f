/**
 * Deadlines of one length on one timer. Every request (and every check-in's replica read)
 * must fail if it is not settled within a fixed time; a timer and a `Promise.race` each
 * cost a timer object, its moves in the runtime's timer list and two promises more, on
 * every request. Deadlines of one length expire in the order they were set, so a list in
 * that order and one timer aimed at its oldest entry serve them all. A settled entry leaves
 * the list at once, so it dies young.
 */
import { setTimeout } from 'node:timers';

interface Entry {
  at: number;
  prev: Entry | null;
  next: Entry | null;
  // Fields, not a closure: under tsx a closure given a name (a property's) is named on every call.
  reject: (err: unknown) => void;
  expired: () => unknown;
}

export class Deadlines {
  private oldest: Entry | null = null;
  private newest: Entry | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(private readonly ms: number) {}

  /** `promise`'s outcome, or a rejection with `expired()` once the deadline passes first. */
  within<T>(promise: Promise<T>, expired: () => unknown): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const entry: Entry = { at: performance.now() + this.ms, prev: this.newest, next: null, reject, expired };
      if (this.newest) this.newest.next = entry;
      else this.oldest = entry;
      this.newest = entry;
      if (this.timer === null) this.arm(this.ms);
      promise.then(
        (value) => {
          this.remove(entry);
          resolve(value);
        },
        (err) => {
          this.remove(entry);
          reject(err);
        },
      );
    });
  }

  private remove(entry: Entry): void {
    if (entry.prev) entry.prev.next = entry.next;
    else if (this.oldest === entry) this.oldest = entry.next;
    else return; // expired already
    if (entry.next) entry.next.prev = entry.prev;
    else this.newest = entry.prev;
    entry.prev = entry.next = null;
  }

  private arm(ms: number): void {
    // The work it watches (a socket, a query) keeps the process alive, not the deadline.
    this.timer = setTimeout(() => this.fire(), ms).unref();
  }

  private fire(): void {
    this.timer = null;
    const now = performance.now();
    while (this.oldest && this.oldest.at <= now) {
      const entry = this.oldest;
      this.remove(entry);
      entry.reject(entry.expired());
    }
    if (this.oldest) this.arm(Math.max(1, Math.ceil(this.oldest.at - now)));
  }
}
