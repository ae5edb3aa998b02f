/**
 * Load shedding for the check-in (api/agent/README.md, Load shedding): a bound on check-ins in flight in this
 * process, and a bound on how late the event loop runs. Past either, a check-in is refused
 * at once with 503 `service_unavailable` and a `Retry-After` of the base plus random jitter,
 * so a returning herd spreads out instead of queueing without bound in front of the
 * database. Other routes are not counted.
 *
 * The in-flight count alone sees a request only once the event loop reaches it: under a
 * herd, requests wait in the socket and the loop for seconds before that. The loop's delay
 * (as fastify's under-pressure uses it) sees that wait, so what is admitted is answered
 * quickly and the rest is refused cheaply.
 *
 * Cheaply matters: a herd is twice what the process can serve, so a refusal that costs as
 * much as a health request keeps the loop saturated by refusals alone. The runtime's HTTP
 * front therefore asks the same gate before the request reaches the app (`refusal()`), and
 * answers a refused check-in with a prepared 503; the route's middleware asks again and
 * counts what it admits.
 */
import { ApiError } from './errors.ts';

export interface ShedOptions {
  maxInFlight: number;
  /** The least a refused client waits; the jitter adds up to as much again. */
  retryAfterSeconds: number;
  /** Refuse while the event loop runs later than this (ms); unset: no bound. */
  maxEventLoopDelayMs?: number;
}

const TICK_MS = 20;

/**
 * The event loop's delay, by a timer's drift: a tick due every 20 ms that runs late ran
 * behind a long turn of the loop. The lesser of the last two drifts: an overloaded loop is
 * late tick after tick, while a process that the OS left waiting once (a busy host) is late
 * for one tick and should not refuse anyone for it.
 */
export class TickDrift {
  private drifts: [number, number] = [0, 0];

  constructor(
    private last: number,
    private readonly tickMs = TICK_MS,
  ) {}

  /** A tick of the timer at `now` (ms). */
  tick(now: number): void {
    this.drifts = [this.drifts[1], Math.max(0, now - this.last - this.tickMs)];
    this.last = now;
  }

  /** Milliseconds the loop has been running late. */
  get ms(): number {
    return Math.min(this.drifts[0], this.drifts[1]);
  }
}

let loopDelay: TickDrift | undefined;

/**
 * The process's event-loop delay in ms (0 until something asks for it the first time).
 * Runtime neutral: the same on Node and Deno. One timer per process, started on first use,
 * never keeping the process alive.
 */
export function eventLoopDelayMs(): number {
  if (!loopDelay) {
    const drift = new TickDrift(performance.now());
    const timer = setInterval(() => drift.tick(performance.now()), TICK_MS);
    (timer as { unref?: () => void }).unref?.();
    loopDelay = drift;
  }
  return loopDelay.ms;
}

/** The bound that refused a check-in. */
export type RefusalCause = 'in_flight' | 'event_loop_delay';

/** The check-ins of one app: admitted while the process keeps up, refused at once otherwise. */
export class CheckinGate {
  private inFlight = 0;
  private refused: Record<RefusalCause, number> = { in_flight: 0, event_loop_delay: 0 };

  constructor(private readonly options: ShedOptions) {}

  /** The `Retry-After` (seconds, with jitter) for a check-in arriving now, or null to admit it. */
  refusal(): number | null {
    const { maxInFlight, retryAfterSeconds, maxEventLoopDelayMs } = this.options;
    const late = maxEventLoopDelayMs !== undefined && eventLoopDelayMs() > maxEventLoopDelayMs;
    if (this.inFlight < maxInFlight && !late) return null;
    this.refused[this.inFlight >= maxInFlight ? 'in_flight' : 'event_loop_delay']++;
    return retryAfterSeconds + Math.floor(Math.random() * (retryAfterSeconds + 1));
  }

  /** The check-ins refused since the last call, by the bound that refused them (for the log). */
  takeRefused(): Record<RefusalCause, number> {
    const taken = this.refused;
    this.refused = { in_flight: 0, event_loop_delay: 0 };
    return taken;
  }

  /** Runs an admitted check-in (counted in flight), or throws the 503 `service_unavailable` at once. */
  async admit(next: () => Promise<void>): Promise<void> {
    const retryAfter = this.refusal();
    if (retryAfter !== null) {
      throw new ApiError('service_unavailable', busyMessage(retryAfter), {
        headers: { 'Retry-After': String(retryAfter) },
      });
    }
    this.inFlight++;
    try {
      await next();
    } finally {
      this.inFlight--;
    }
  }
}

export function busyMessage(retryAfterSeconds: number): string {
  return `the service is busy; retry in ${retryAfterSeconds} seconds`;
}
