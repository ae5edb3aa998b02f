/**
 * The portal's catalogs, one per language, each assembled from its folder's sections
 * (`de/`, `en/`: one file per part of the portal). German is the reference: its shape is
 * the type every other language fills, and a test walks both for a key missing in either.
 */
import { audit as deAudit } from './de/audit.ts';
import { common as deCommon } from './de/common.ts';
import { isoBuilds as deIsoBuilds } from './de/iso_builds.ts';
import { login as deLogin } from './de/login.ts';
import { webhooks as deWebhooks } from './de/webhooks.ts';
import { audit as enAudit } from './en/audit.ts';
import { common as enCommon } from './en/common.ts';
import { isoBuilds as enIsoBuilds } from './en/iso_builds.ts';
import { login as enLogin } from './en/login.ts';
import { webhooks as enWebhooks } from './en/webhooks.ts';
import type { Language } from './language.ts';

const de = {
  common: deCommon,
  login: deLogin,
  audit: deAudit,
  webhooks: deWebhooks,
  isoBuilds: deIsoBuilds,
};

export type Catalog = typeof de;

const en: Catalog = {
  common: enCommon,
  login: enLogin,
  audit: enAudit,
  webhooks: enWebhooks,
  isoBuilds: enIsoBuilds,
};

export const catalogs: Record<Language, Catalog> = { de, en };
