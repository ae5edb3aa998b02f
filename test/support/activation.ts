/**
 * Builders of the installer's handshake for tests of every feature: an activated device,
 * a resolved device (with its one-time bootstrap token), an enrollment session.
 */
import { expect } from 'vitest';
import type { TestContext } from './app.ts';
import { activationCodeOf, sequence } from './builders.ts';

/** The seeded templates (CONTRACT §4), the same in every installation. */
export const TEMPLATES = {
  debianStandard: '6d1f4c2a-3b5e-4f70-9a1d-0c2e8b7a5d01',
  ubuntuStandard: '6d1f4c2a-3b5e-4f70-9a1d-0c2e8b7a5d02',
  debianEncrypted: '6d1f4c2a-3b5e-4f70-9a1d-0c2e8b7a5d03',
  ubuntuEncrypted: '6d1f4c2a-3b5e-4f70-9a1d-0c2e8b7a5d04',
} as const;

export interface ActivatedDevice {
  device_id: string;
  organization_id: string;
  /** The credential used (the organization's classic code); resolve needs it again. */
  code: string;
}

export interface RuntimeBlueprintBody {
  device_id: string;
  organization_id: string;
  template: { id: string; name: string };
  workspace: { key: string; name: string };
  backend: { key: string; name: string; distribution: string };
  blueprints: Array<{ merkmal: string; ansible_role: string }>;
  installation: Record<string, unknown>;
  partitioning: { scheme: string; root_filesystem: string; encryption: { type: string; unlock: string } | null };
  disk_encryption: { install_passphrase: string } | null;
  agent: { base_url: string; device_id: string; bootstrap_token: string };
}

let serials = 0;

export function newSerial(): string {
  return `SN-${sequence(++serials)}-${crypto.randomUUID().slice(0, 8).toUpperCase()}`;
}

/** Activates a device of the organization with its classic code (a fresh serial unless given). */
export async function activateDevice(
  ctx: TestContext,
  organizationId: string,
  serial: string = newSerial(),
): Promise<ActivatedDevice> {
  const code = await activationCodeOf(ctx, organizationId);
  const res = await ctx.request('POST', '/api/v1/activate', { token: null, body: { code, serial } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body.organization_id).toBe(organizationId);
  return { device_id: res.body.device_id, organization_id: organizationId, code };
}

/** Resolves a template for the device (default: Debian Standard) and returns the Runtime Blueprint. */
export async function resolveDevice(
  ctx: TestContext,
  input: { code: string; device_id: string; template_id?: string },
): Promise<RuntimeBlueprintBody> {
  const templateId = input.template_id ?? TEMPLATES.debianStandard;
  const res = await ctx.request('POST', `/api/v1/templates/${templateId}/resolve`, {
    token: null,
    body: { code: input.code, device_id: input.device_id },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as RuntimeBlueprintBody;
}

export interface EnrollmentSessionBody {
  id: string;
  organization_id: string;
  template_id: string;
  expires_at: string;
  max_devices: number;
  devices_used: number;
  revoked_at: string | null;
  created_at: string;
}

/** Creates an enrollment session (default: Debian Standard, 10 devices, valid one day). */
export async function createEnrollmentSession(
  ctx: TestContext,
  organizationId: string,
  fields: { template_id?: string; max_devices?: number; expires_at?: string } = {},
): Promise<EnrollmentSessionBody> {
  const res = await ctx.request('POST', `/api/v1/organizations/${organizationId}/enrollment-sessions`, {
    body: {
      template_id: TEMPLATES.debianStandard,
      max_devices: 10,
      expires_at: new Date(Date.now() + 24 * 3600 * 1000).toISOString(),
      ...fields,
    },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as EnrollmentSessionBody;
}
