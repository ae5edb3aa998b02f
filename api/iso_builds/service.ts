/**
 * Triggering an ISO build, shared by the API route and the portal: queues the build and
 * returns it with the audit entry (which says whether a WLAN profile was given, never
 * its SSID or key).
 */
import type { AppDeps } from '../app_env.ts';
import type { AuditEntry } from '../audit/repo.ts';
import type { Db } from '../db/client.ts';
import * as repo from './repo.ts';
import type { WlanCredentials } from './wlan_crypto.ts';

export interface TriggerInput {
  template_id?: string | undefined;
  enrollment_session_id?: string | undefined;
  wlan?: WlanCredentials | undefined;
}

export async function triggerIsoBuild(
  db: Db,
  deps: Pick<AppDeps, 'config' | 'log'>,
  organizationId: string,
  body: TriggerInput | undefined,
): Promise<{ row: repo.IsoBuildRow; audit: AuditEntry }> {
  const row = await repo.createIsoBuild(db, {
    organizationId,
    wlan: body?.wlan,
    wlanKey: deps.config.wlanKey,
    templateId: body?.template_id,
    enrollmentSessionId: body?.enrollment_session_id,
  });
  deps.log.info('iso build queued', {
    build_id: row.id,
    organization_id: organizationId,
    wlan: body?.wlan !== undefined,
    template_id: row.template_id,
    enrollment_session: row.enrollment_session_id !== null,
  });
  return {
    row,
    audit: {
      organizationId,
      targetType: 'iso_build',
      targetId: row.id,
      details: {
        wlan: body?.wlan !== undefined,
        template_id: row.template_id,
        enrollment_session_id: row.enrollment_session_id,
      },
    },
  };
}
