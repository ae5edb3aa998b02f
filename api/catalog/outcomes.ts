/**
 * What a device reported for each Merkmal of its catalog and whether it converged: the
 * agent's last report per Merkmal (`device_merkmal_outcomes`, kept by a trigger) and the
 * convergence by the database's `merkmal_convergence`, for the states the override
 * resolution gave (`state.ts`).
 */
import type { Db } from '../db/client.ts';
import type { Convergence } from '../devices/repo.ts';

export type ReportedEvent = 'applied' | 'apply_failed' | 'removed' | 'remove_failed';

export interface MerkmalOutcome {
  reported: { event: ReportedEvent; at: Date; detail: unknown } | null;
  convergence: Convergence;
}

/** The outcome of each of these Merkmale of the device in its given state, by Merkmal key. */
export async function loadOutcomes(
  db: Db,
  deviceId: string,
  states: ReadonlyArray<{ merkmal: string; state: 'present' | 'absent' }>,
): Promise<Map<string, MerkmalOutcome>> {
  const rows = await db<
    Array<{
      merkmal: string;
      reported_event: ReportedEvent | null;
      reported_at: Date | null;
      reported_detail: unknown;
      convergence: Convergence;
    }>
  >`
    select s.merkmal, o.reported_event, o.reported_at, o.reported_detail,
           merkmal_convergence(s.state, o.changed_seq, o.reported_event, o.reported_seq, o.reported_at,
                               d.agent_secret_issued_at) as convergence
    from devices d
    cross join unnest(${states.map((s) => s.merkmal)}::text[], ${states.map((s) => s.state)}::text[]) as s (merkmal, state)
    left join device_merkmal_outcomes o on o.device_id = d.id and o.merkmal = s.merkmal
    where d.id = ${deviceId}`;
  return new Map(
    rows.map((r) => [
      r.merkmal,
      {
        reported:
          r.reported_event === null
            ? null
            : { event: r.reported_event, at: r.reported_at!, detail: r.reported_detail ?? null },
        convergence: r.convergence,
      },
    ]),
  );
}
