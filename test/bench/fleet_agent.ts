/**
 * One simulated device agent of the fleet simulator (fleet_sim.ts), speaking the agent
 * protocol as the shell agent does: bootstrap once with the one-time token, check in with
 * the last ETag as If-None-Match, wait out a 503's Retry-After, and come back at the poll
 * interval (with jitter) when the service does not answer. After a 200 it applies the new
 * desired state and reports every order's outcome; after a 304 it applies again only when
 * the last apply failed or a day has passed, and then reports the outcomes that are new
 * since the last accepted report, and failures. Then it runs the device actions of the last
 * 200 in order (§28): each only after its start answered 204, and never an id it has
 * started before (its own record, kept for the life of the object); the run is simulated
 * (a short sleep), and the result is spooled and retried like a report, a 409
 * `action_finished` on a retry counting as delivered. It keeps no timer of its own:
 * `cycle()` does one round and says how long to wait, so the simulator schedules thousands
 * of them and a test can step one by hand.
 */

export interface AgentAnswer {
  status: number;
  etag: string | null;
  retryAfter: string | null;
  body: string;
}

/** Sends one request; rejects when no answer came (connection refused, reset, timeout). */
export type AgentTransport = (path: string, headers: Record<string, string>, body: string) => Promise<AgentAnswer>;

export type AgentStep = 'bootstrap' | 'checkin' | 'report' | 'action-start' | 'action-result';

export interface AgentOptions {
  pollSeconds: number;
  /** The Merkmal whose orders fail with `failProbability` (`apply_failed`/`remove_failed`). */
  failMerkmal?: string;
  failProbability?: number;
  random?: () => number;
  /** The clock of the daily apply, in milliseconds (Date.now unless a test steps it). */
  now?: () => number;
  /** Every request's outcome: its status, or `null` with the error when nothing answered. */
  observe?: (step: AgentStep, status: number | null, error?: string) => void;
  /** How long a simulated action runs, in milliseconds (200). */
  actionRunMs?: number;
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
  optionen?: Record<string, unknown>;
}

type ReportEvent = 'applied' | 'apply_failed' | 'removed' | 'remove_failed';

interface ReportEntry {
  merkmal: string;
  event: ReportEvent;
  detail: string;
}

/** One order as this agent ran it: the state and optionen it applied, what that came to, when. */
export interface AgentRun {
  state: 'present' | 'absent';
  optionen: Record<string, unknown>;
  event: ReportEvent;
  at: number;
}

/** A device action as the check-in hands it over. */
interface DeliveredAction {
  id: string;
  type: string;
  parameters: Record<string, unknown>;
  expires_at: string;
}

/**
 * This agent's record of one action it started (the shell agent's file under
 * /var/lib/fleet/actions/): made before the start is sent, so an id is never started
 * twice, whatever the check-in says later.
 */
export interface ActionRecord {
  type: string;
  /**
   * `starting`: the start sent, no 204 seen yet (sent again next cycle: the service
   * answers 204 again for a running action); `ran`: run, its result not yet delivered
   * (spooled); `done`: the result delivered, or the start or result refused for good.
   */
  state: 'starting' | 'ran' | 'done';
  /** The result to send, kept until it is delivered. */
  result: { exit_code: number; output: string; duration_ms: number; details: Record<string, unknown> } | null;
  /** Result requests that found no answer (sent again next cycle). */
  resultRetries: number;
  /** How it ended: `accepted` (204), `finished_on_retry` (409 `action_finished` after a lost answer), or the refusal's status and code. */
  outcome: string | null;
}

/** A report on its way, with the outcome of each entry to remember once it is accepted. */
interface Report {
  entries: ReportEntry[];
  outcomes: Map<string, string>;
}

const JSON_HEADERS = { 'content-type': 'application/json' };
const CHECKIN_BODY = JSON.stringify({ agent_version: 'fleet-sim' });
/** After 401, 403 or 409 the shell agent gives up and tries again once an hour. */
const REFUSED_WAIT_SECONDS = 3600;
/** The shell agent waits out at most this long, whatever Retry-After says. */
const MAX_RETRY_AFTER_SECONDS = 300;
/** After this long without a full apply, a 304 applies the kept state again (the shell agent's daily apply). */
const DAY_MS = 86_400_000;

export class SimAgent {
  secret: string | null = null;
  etag: string | null = null;
  /** The status with which the service refused this agent for good (401, 403, 409), or null. */
  refused: number | null = null;
  /**
   * Every order this agent has run, per Merkmal, oldest first: its own record of what it
   * applied (the simulator counts from it which devices ran a change).
   */
  readonly runs = new Map<string, AgentRun[]>();
  /** A report that found no answer, sent again at the next cycle (the shell agent spools it). */
  private pendingReport: Report | null = null;
  private reportInFlight = false;
  /**
   * How many times this agent ran its desired state (each apply, whatever came of it): the
   * simulator counts from it the applies a change caused.
   */
  applies = 0;
  /** The desired state last applied (the orders of the last 200), kept for a 304's apply. */
  private desired: Order[] | null = null;
  /** The whole desired state (orders, blueprints, repository) as canonical JSON, as last applied without a failure. */
  private appliedContent: string | null = null;
  private desiredContent: string | null = null;
  private lastApplyFailed = false;
  private lastFullApplyAt = 0;
  /** Per Merkmal, the outcome of the last accepted report (event and optionen). */
  private readonly reported = new Map<string, string>();
  private failMerkmal: string | undefined;
  private failProbability: number;
  private readonly random: () => number;
  private readonly now: () => number;
  /** Every action id this agent started, with what came of it; never forgotten. */
  readonly actions = new Map<string, ActionRecord>();
  /**
   * How many times this agent ran each action id, counted apart from the records that
   * guard it: the figure "run twice" counts those above 1.
   */
  readonly actionRuns = new Map<string, number>();
  /** The actions of the last 200, run in order after each check-in (a 304 names the same). */
  private delivered: DeliveredAction[] = [];
  /** Records not `done`: while any, the agent is not settled. */
  private openActions = 0;
  /** A 200 handed over an action this agent had started already: not started again. */
  redelivered = 0;

  constructor(
    readonly deviceId: string,
    private readonly bootstrapToken: string,
    private readonly send: AgentTransport,
    private readonly options: AgentOptions,
  ) {
    this.random = options.random ?? Math.random;
    this.now = options.now ?? Date.now;
    this.failMerkmal = options.failMerkmal;
    this.failProbability = options.failProbability ?? 0;
  }

  /** From now on, orders of `merkmal` fail with `probability` (none when `merkmal` is undefined). */
  failing(merkmal: string | undefined, probability: number): void {
    this.failMerkmal = merkmal;
    this.failProbability = probability;
  }

  /** Checked in, and no report or action result of its is waiting to be sent or on its way. */
  get settled(): boolean {
    return this.etag !== null && this.pendingReport === null && !this.reportInFlight && this.openActions === 0;
  }

  /** Whether this agent has run `merkmal` in `state` (by default with any optionen). */
  ran(merkmal: string, state: 'present' | 'absent', optionen?: Record<string, unknown>): boolean {
    const wanted = optionen === undefined ? null : canonical(optionen);
    return (this.runs.get(merkmal) ?? []).some(
      (r) => r.state === state && (wanted === null || canonical(r.optionen) === wanted),
    );
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

  /** The wait an answer asks for: Retry-After on 429/503, an hour after a refusal, otherwise the poll interval. */
  private waitAfter(answer: AgentAnswer | null): number {
    if (answer && (answer.status === 401 || answer.status === 403 || answer.status === 409)) {
      this.refused = answer.status;
      return this.jittered(REFUSED_WAIT_SECONDS);
    }
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
    if (!(await this.sendSpooledResults(auth))) return { checkin: null, delayMs: this.waitAfter(null) };
    const headers: Record<string, string> = { ...auth, ...JSON_HEADERS };
    if (this.etag !== null) headers['if-none-match'] = this.etag;
    const answer = await this.request('checkin', '/api/v1/agent/checkin', headers, CHECKIN_BODY);
    if (answer?.status === 200 || answer?.status === 304) this.refused = null;
    if (answer?.status === 200) {
      this.etag = answer.etag;
      const state = JSON.parse(answer.body) as { auftraege: Order[]; blueprints: unknown; repository_url: unknown };
      const content = canonical([state.auftraege, state.blueprints, state.repository_url]);
      this.desired = state.auftraege;
      this.desiredContent = content;
      // The state it already runs, told again: nothing to do (a failed last apply is retried).
      if (content !== this.appliedContent || this.lastApplyFailed) await this.apply(auth, 'every');
      this.delivered = (state as { actions?: DeliveredAction[] }).actions ?? [];
      for (const action of this.delivered) if (this.actions.has(action.id)) this.redelivered++;
    } else if (
      answer?.status === 304 &&
      this.desired !== null &&
      (this.lastApplyFailed || this.now() - this.lastFullApplyAt >= DAY_MS)
    ) {
      // The same state again: a retry after a failure, or the daily apply.
      await this.apply(auth, 'new');
    }
    if (answer?.status === 200 || answer?.status === 304) await this.runActions(auth);
    return { checkin: answer?.status ?? null, delayMs: this.waitAfter(answer) };
  }

  /**
   * Runs the kept desired state and reports: with `every` (a new desired state) each
   * order's outcome, so a change that leaves an outcome as it was is still confirmed; with
   * `new` (the same state again) only outcomes new since the last accepted report, and failures.
   */
  private async apply(auth: Record<string, string>, which: 'every' | 'new'): Promise<void> {
    const report: Report = { entries: [], outcomes: new Map() };
    let failed = false;
    const at = this.now();
    this.applies++;
    for (const order of this.desired!) {
      const entry = this.outcome(order);
      const optionen = order.optionen ?? {};
      const runs = this.runs.get(order.merkmal) ?? [];
      runs.push({ state: order.state, optionen, event: entry.event, at });
      this.runs.set(order.merkmal, runs);
      const ok = !entry.event.endsWith('_failed');
      if (!ok) failed = true;
      const outcome = `${entry.event}|${canonical(optionen)}`;
      if (ok && which === 'new' && this.reported.get(order.merkmal) === outcome) continue;
      report.entries.push(entry);
      report.outcomes.set(order.merkmal, outcome);
    }
    this.lastApplyFailed = failed;
    this.appliedContent = failed ? null : this.desiredContent;
    if (!failed) this.lastFullApplyAt = at;
    // The report is spooled before it is sent: a lost one goes first in the next cycle.
    if (report.entries.length > 0) await this.sendReport(auth, report);
  }

  /** What applying the order came to: the chosen Merkmal fails now and then, every other order succeeds. */
  private outcome(order: Order): ReportEntry {
    const present = order.state === 'present';
    if (order.merkmal === this.failMerkmal && this.random() < this.failProbability) {
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

  /**
   * After the apply: first the starts sent before that found no 204 (their action may have
   * left the answer, being running), then the last 200's actions in order, each id once.
   * Stops at the first start or result that finds no answer: the rest wait for the next cycle.
   */
  private async runActions(auth: Record<string, string>): Promise<void> {
    for (const [id, record] of this.actions) {
      if (record.state === 'starting' && !(await this.startAndRun(auth, id, record))) return;
    }
    for (const action of this.delivered) {
      if (this.actions.has(action.id)) continue;
      // Recorded before the start is sent: from here on this id is never started again.
      const record: ActionRecord = {
        type: action.type,
        state: 'starting',
        result: null,
        resultRetries: 0,
        outcome: null,
      };
      this.actions.set(action.id, record);
      this.openActions++;
      if (!(await this.startAndRun(auth, action.id, record))) return;
    }
  }

  /** False when the start or the result found no answer (kept for the next cycle). */
  private async startAndRun(auth: Record<string, string>, id: string, record: ActionRecord): Promise<boolean> {
    const answer = await this.request('action-start', `/api/v1/agent/actions/${id}/start`, auth, '');
    if (
      answer === null ||
      answer.status === 429 ||
      answer.status >= 500 ||
      answer.status === 401 ||
      answer.status === 403
    ) {
      return false;
    }
    if (answer.status !== 204) {
      // Canceled, expired, finished or not this device's: never run.
      this.finishRecord(record, `start ${answer.status} ${errorCode(answer.body)}`);
      return true;
    }
    const started = this.now();
    this.actionRuns.set(id, (this.actionRuns.get(id) ?? 0) + 1);
    await new Promise((resolve) => setTimeout(resolve, this.options.actionRunMs ?? 200));
    record.result = {
      exit_code: 0,
      output: `fleet-sim: ${record.type} ran (simulated)\n`,
      duration_ms: Math.max(0, Math.round(this.now() - started)),
      details: {},
    };
    record.state = 'ran';
    return this.sendResult(auth, id, record);
  }

  /** The results that found no answer before, oldest first; false when one still finds none. */
  private async sendSpooledResults(auth: Record<string, string>): Promise<boolean> {
    if (this.openActions === 0) return true;
    for (const [id, record] of this.actions) {
      if (record.state === 'ran' && !(await this.sendResult(auth, id, record))) return false;
    }
    return true;
  }

  /** True once the result is delivered (204, or 409 `action_finished` on a retry) or refused for good. */
  private async sendResult(auth: Record<string, string>, id: string, record: ActionRecord): Promise<boolean> {
    const answer = await this.request(
      'action-result',
      `/api/v1/agent/actions/${id}/result`,
      { ...auth, ...JSON_HEADERS },
      JSON.stringify(record.result),
    );
    if (
      answer === null ||
      answer.status === 429 ||
      answer.status >= 500 ||
      answer.status === 401 ||
      answer.status === 403
    ) {
      record.resultRetries++;
      return false;
    }
    if (answer.status === 204) this.finishRecord(record, 'accepted');
    else if (answer.status === 409 && errorCode(answer.body) === 'action_finished' && record.resultRetries > 0) {
      // The first result was taken and only its answer lost: delivered.
      this.finishRecord(record, 'finished_on_retry');
    } else this.finishRecord(record, `result ${answer.status} ${errorCode(answer.body)}`);
    return true;
  }

  private finishRecord(record: ActionRecord, outcome: string): void {
    record.state = 'done';
    record.outcome = outcome;
    record.result = null;
    this.openActions--;
  }

  /** True once the report is delivered or refused for good; false keeps it for the next cycle. */
  private async sendReport(auth: Record<string, string>, report: Report): Promise<boolean> {
    this.reportInFlight = true;
    const answer = await this.request(
      'report',
      '/api/v1/agent/report',
      { ...auth, ...JSON_HEADERS },
      JSON.stringify({ entries: report.entries.slice(0, 500) }),
    ).finally(() => {
      this.reportInFlight = false;
    });
    // No answer, or the service busy or failing: the shell agent keeps the report and sends it again.
    const again = answer === null || answer.status === 429 || answer.status >= 500;
    this.pendingReport = again ? report : null;
    if (answer?.status === 200) for (const [merkmal, outcome] of report.outcomes) this.reported.set(merkmal, outcome);
    return !again;
  }
}

/** The error code of an error body, or `-` when it has none. */
function errorCode(body: string): string {
  try {
    const code = (JSON.parse(body) as { error?: unknown }).error;
    return typeof code === 'string' ? code : '-';
  } catch {
    return '-';
  }
}

/** JSON with the keys sorted, so equal optionen compare equal. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
