/**
 * One simulated device agent of the fleet simulator (fleet_sim.ts), speaking the agent
 * protocol as the shell agent does: bootstrap once with the one-time token, check in with
 * the last ETag as If-None-Match, report every order's outcome after a 200, wait out a
 * 503's Retry-After, and come back at the poll interval (with jitter) when the service does
 * not answer. It keeps no timer of its own: `cycle()` does one round and says how long to
 * wait, so the simulator schedules thousands of them and a test can step one by hand.
 */

export interface AgentAnswer {
  status: number;
  etag: string | null;
  retryAfter: string | null;
  body: string;
}

/** Sends one request; rejects when no answer came (connection refused, reset, timeout). */
export type AgentTransport = (path: string, headers: Record<string, string>, body: string) => Promise<AgentAnswer>;

export type AgentStep = 'bootstrap' | 'checkin' | 'report';

export interface AgentOptions {
  pollSeconds: number;
  /** The Merkmal whose orders fail with `failProbability` (`apply_failed`/`remove_failed`). */
  failMerkmal?: string;
  failProbability?: number;
  random?: () => number;
  /** Every request's outcome: its status, or `null` with the error when nothing answered. */
  observe?: (step: AgentStep, status: number | null, error?: string) => void;
}

export interface CycleResult {
  /** The check-in's status; `null` when there was none (not bootstrapped) or no answer came. */
  checkin: number | null;
  /** Milliseconds until the next cycle. */
  delayMs: number;
}

interface Order {
  merkmal: string;
  state: 'present' | 'absent';
}

interface ReportEntry {
  merkmal: string;
  event: 'applied' | 'apply_failed' | 'removed' | 'remove_failed';
  detail: string;
}

const JSON_HEADERS = { 'content-type': 'application/json' };
const CHECKIN_BODY = JSON.stringify({ agent_version: 'fleet-sim' });
/** The shell agent waits out at most this long, whatever Retry-After says. */
const MAX_RETRY_AFTER_SECONDS = 300;

export class SimAgent {
  secret: string | null = null;
  etag: string | null = null;
  /** A report that found no answer, sent again at the next cycle (the shell agent spools it). */
  private pendingReport: ReportEntry[] | null = null;
  private readonly random: () => number;

  constructor(
    readonly deviceId: string,
    private readonly bootstrapToken: string,
    private readonly send: AgentTransport,
    private readonly options: AgentOptions,
  ) {
    this.random = options.random ?? Math.random;
  }

  /** Up to a tenth more than `seconds`, as the shell agent's `jittered`, so a fleet told alike spreads out. */
  private jittered(seconds: number): number {
    return Math.round(seconds * 1000 * (1 + this.random() * 0.1));
  }

  private async request(step: AgentStep, path: string, headers: Record<string, string>, body: string) {
    try {
      const answer = await this.send(path, headers, body);
      this.options.observe?.(step, answer.status);
      return answer;
    } catch (err) {
      this.options.observe?.(step, null, (err as NodeJS.ErrnoException).code ?? (err as Error).message);
      return null;
    }
  }

  /** The wait an answer asks for: Retry-After on 429/503, otherwise the poll interval. */
  private waitAfter(answer: AgentAnswer | null): number {
    if (answer && (answer.status === 503 || answer.status === 429)) {
      const seconds = /^\d{1,9}$/.test(answer.retryAfter?.trim() ?? '') ? Number(answer.retryAfter) : NaN;
      if (Number.isFinite(seconds)) return this.jittered(Math.min(seconds, MAX_RETRY_AFTER_SECONDS));
    }
    return this.jittered(this.options.pollSeconds);
  }

  async cycle(): Promise<CycleResult> {
    if (this.secret === null) {
      const answer = await this.request(
        'bootstrap',
        '/api/v1/agent/bootstrap',
        JSON_HEADERS,
        JSON.stringify({ device_id: this.deviceId, bootstrap_token: this.bootstrapToken }),
      );
      if (answer?.status !== 201) return { checkin: null, delayMs: this.waitAfter(answer) };
      this.secret = (JSON.parse(answer.body) as { agent_secret: string }).agent_secret;
    }
    const auth = { authorization: `Bearer ${this.secret}` };
    if (this.pendingReport && !(await this.sendReport(auth, this.pendingReport))) {
      return { checkin: null, delayMs: this.waitAfter(null) };
    }
    const headers: Record<string, string> = { ...auth, ...JSON_HEADERS };
    if (this.etag !== null) headers['if-none-match'] = this.etag;
    const answer = await this.request('checkin', '/api/v1/agent/checkin', headers, CHECKIN_BODY);
    if (answer?.status === 200) {
      this.etag = answer.etag;
      const { auftraege } = JSON.parse(answer.body) as { auftraege: Order[] };
      if (auftraege.length > 0)
        await this.sendReport(
          auth,
          auftraege.map((o) => this.outcome(o)),
        );
    }
    return { checkin: answer?.status ?? null, delayMs: this.waitAfter(answer) };
  }

  /** What applying the order came to: the chosen Merkmal fails now and then, every other order succeeds. */
  private outcome(order: Order): ReportEntry {
    const present = order.state === 'present';
    if (order.merkmal === this.options.failMerkmal && this.random() < (this.options.failProbability ?? 0)) {
      return {
        merkmal: order.merkmal,
        event: present ? 'apply_failed' : 'remove_failed',
        detail: `fleet-sim: ansible role ${order.merkmal} failed (simulated)`,
      };
    }
    return {
      merkmal: order.merkmal,
      event: present ? 'applied' : 'removed',
      detail: `fleet-sim: ansible role ${order.merkmal} ${present ? 'applied' : 'removed'}`,
    };
  }

  /** True once the report is delivered or refused for good; false keeps it for the next cycle. */
  private async sendReport(auth: Record<string, string>, entries: ReportEntry[]): Promise<boolean> {
    const answer = await this.request(
      'report',
      '/api/v1/agent/report',
      { ...auth, ...JSON_HEADERS },
      JSON.stringify({ entries }),
    );
    // No answer, or the service busy or failing: the shell agent keeps the report and sends it again.
    const again = answer === null || answer.status === 429 || answer.status >= 500;
    this.pendingReport = again ? entries : null;
    return !again;
  }
}
