/**
 * The portal's catalogs, one per language, each assembled from its folder's sections
 * (`de/`, `en/`: one file per part of the portal). German is the reference: its shape is
 * the type every other language fills, and a test walks both for a key missing in either.
 */
import { common as deCommon } from './de/common.ts';
import { login as deLogin } from './de/login.ts';
import { organization as deOrganization } from './de/organization.ts';
import { enrollment as deEnrollment } from './de/enrollment.ts';
import { credentials as deCredentials } from './de/credentials.ts';
import { common as enCommon } from './en/common.ts';
import { login as enLogin } from './en/login.ts';
import { organization as enOrganization } from './en/organization.ts';
import { enrollment as enEnrollment } from './en/enrollment.ts';
import { credentials as enCredentials } from './en/credentials.ts';
import type { Language } from './language.ts';

const de = {
  common: deCommon,
  login: deLogin,
  organization: deOrganization,
  enrollment: deEnrollment,
  credentials: deCredentials,
};

export type Catalog = typeof de;

const en: Catalog = {
  common: enCommon,
  login: enLogin,
  organization: enOrganization,
  enrollment: enEnrollment,
  credentials: enCredentials,
};

export const catalogs: Record<Language, Catalog> = { de, en };
