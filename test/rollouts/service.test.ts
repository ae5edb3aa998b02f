/**
 * The rollout service as the portal and the simulator call it: creation with its rings and
 * ring 0 opened, the reads, and the transitions, straight on the database.
 */
import { describe, expect, it } from 'vitest';
import type { Caller } from '../../api/access/declaration.ts';
import {
  abortRollout,
  countDevicesAltered,
  createRollout,
  getRollout,
  listRollouts,
  pauseRollout,
  resumeRollout,
} from '../../api/rollouts/service.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { insertDevice, insertOrgUnit } from '../support/devices.ts';

const ctx = useTestApp();
const operator: Caller = { type: 'operator' };
const POLL = 300;

async function fleet(n: number) {
  const org = await createOrganization(ctx);
  const unit = await insertOrgUnit(ctx.sql, org.id, 'Bürgerbüro');
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await insertDevice(ctx.sql, { organizationId: org.id, oeId: unit })).id);
  return { orgId: org.id, unit, ids };
}

describe('the rollout service', () => {
  it('creates a rollout with its rings, opens ring 0, and pauses, resumes and aborts it', async () => {
    const { orgId, unit, ids } = await fleet(20);
    expect(await countDevicesAltered(ctx.sql, orgId, 'org_unit', unit, 'libreoffice', 'select')).toBe(20);
    const { rollout, audit } = await ctx.sql.begin((tx) =>
      createRollout(
        tx,
        orgId,
        { scope: 'org_unit', scope_id: unit, merkmal: 'libreoffice', action: 'select', rings: [50, 100] },
        operator,
        POLL,
      ),
    );
    expect(audit).toMatchObject({ organizationId: orgId, targetType: 'rollout', targetId: rollout.id });
    expect(rollout).toMatchObject({
      status: 'running',
      paused_reason: null,
      current_ring: 0,
      rings: [50, 100],
      max_failure_ratio: 0.1,
      min_reported_ratio: 0.9,
      soak_seconds: 3600,
      created_by: { type: 'operator' },
      completed_at: null,
    });
    expect(rollout.rings_detail.map((r) => r.devices).reduce((a, b) => a + b)).toBe(20);
    expect(rollout.rings_detail[0]!.opened_at).not.toBeNull();
    expect(rollout.rings_detail[1]!.opened_at).toBeNull();
    const [applied] = await ctx.sql<{ n: number }[]>`
      select count(*)::int as n from devices where id = any(${ids}::uuid[]) and rollouts_text = ${rollout.id}`;
    expect(applied!.n).toBe(rollout.rings_detail[0]!.devices);
    const [job] = await ctx.sql`select 1 from graphile_worker.jobs where key = ${`judge_rollout:${rollout.id}:soon`}`;
    expect(job).toBeDefined();

    expect((await getRollout(ctx.sql, rollout.id, POLL)).id).toBe(rollout.id);
    expect((await listRollouts(ctx.sql, orgId, {}, POLL)).items.map((r) => r.id)).toEqual([rollout.id]);

    const paused = await pauseRollout(ctx.sql, rollout.id, operator, POLL);
    expect(paused.rollout).toMatchObject({ status: 'paused', paused_reason: 'manual' });
    const resumed = await resumeRollout(ctx.sql, rollout.id, operator, POLL);
    expect(resumed.rollout).toMatchObject({ status: 'running', paused_reason: null });
    const aborted = await abortRollout(ctx.sql, rollout.id, operator, POLL);
    expect(aborted.rollout.status).toBe('aborted');
    expect(aborted.rollout.completed_at).not.toBeNull();
    const [left] = await ctx.sql<{ n: number }[]>`
      select count(*)::int as n from devices where id = any(${ids}::uuid[]) and rollouts_text <> ''`;
    expect(left!.n).toBe(0);
    await expect(pauseRollout(ctx.sql, rollout.id, operator, POLL)).rejects.toMatchObject({
      code: 'rollout_not_active',
    });
  });
});
