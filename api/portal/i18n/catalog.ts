/**
 * The portal's catalogs, one per language, each assembled from its folder's sections
 * (`de/`, `en/`: one file per part of the portal). German is the reference: its shape is
 * the type every other language fills, and a test walks both for a key missing in either.
 */
import { actions as deActions } from './de/actions.ts';
import { common as deCommon } from './de/common.ts';
import { login as deLogin } from './de/login.ts';
import { audit as deAudit } from './de/audit.ts';
import { bulk as deBulk } from './de/bulk.ts';
import { credentials as deCredentials } from './de/credentials.ts';
import { deviceDetails as deDeviceDetails } from './de/device_details.ts';
import { devices as deDevices } from './de/devices.ts';
import { enrollment as deEnrollment } from './de/enrollment.ts';
import { isoBuilds as deIsoBuilds } from './de/iso_builds.ts';
import { organization as deOrganization } from './de/organization.ts';
import { overview as deOverview } from './de/overview.ts';
import { rollouts as deRollouts } from './de/rollouts.ts';
import { scopeCatalog as deScopeCatalog } from './de/scope_catalog.ts';
import { security as deSecurity } from './de/security.ts';
import { webhooks as deWebhooks } from './de/webhooks.ts';
import { actions as enActions } from './en/actions.ts';
import { common as enCommon } from './en/common.ts';
import { login as enLogin } from './en/login.ts';
import { audit as enAudit } from './en/audit.ts';
import { bulk as enBulk } from './en/bulk.ts';
import { credentials as enCredentials } from './en/credentials.ts';
import { deviceDetails as enDeviceDetails } from './en/device_details.ts';
import { devices as enDevices } from './en/devices.ts';
import { enrollment as enEnrollment } from './en/enrollment.ts';
import { isoBuilds as enIsoBuilds } from './en/iso_builds.ts';
import { organization as enOrganization } from './en/organization.ts';
import { overview as enOverview } from './en/overview.ts';
import { rollouts as enRollouts } from './en/rollouts.ts';
import { scopeCatalog as enScopeCatalog } from './en/scope_catalog.ts';
import { security as enSecurity } from './en/security.ts';
import { webhooks as enWebhooks } from './en/webhooks.ts';
import type { Language } from './language.ts';

const de = {
  common: deCommon,
  actions: deActions,
  login: deLogin,
  audit: deAudit,
  bulk: deBulk,
  credentials: deCredentials,
  deviceDetails: deDeviceDetails,
  devices: deDevices,
  enrollment: deEnrollment,
  isoBuilds: deIsoBuilds,
  organization: deOrganization,
  overview: deOverview,
  rollouts: deRollouts,
  scopeCatalog: deScopeCatalog,
  security: deSecurity,
  webhooks: deWebhooks,
};

export type Catalog = typeof de;

const en: Catalog = {
  common: enCommon,
  actions: enActions,
  login: enLogin,
  audit: enAudit,
  bulk: enBulk,
  credentials: enCredentials,
  deviceDetails: enDeviceDetails,
  devices: enDevices,
  enrollment: enEnrollment,
  isoBuilds: enIsoBuilds,
  organization: enOrganization,
  overview: enOverview,
  rollouts: enRollouts,
  scopeCatalog: enScopeCatalog,
  security: enSecurity,
  webhooks: enWebhooks,
};

export const catalogs: Record<Language, Catalog> = { de, en };
