/** The security data's objects and the query filters of the vulnerability lists. */
import { z } from '@hono/zod-openapi';
import { Timestamp } from '../http/openapi.ts';
import { PageQuery } from '../http/pagination.ts';
import { URGENCIES } from './feed_parse.ts';

const Urgency = z.enum(URGENCIES).openapi('VulnerabilityUrgency', {
  description:
    'Worst first: `critical`, `high`, `medium`, `low`, `unknown` (Debian\'s "not yet assigned", an OSV record ' +
    "without a priority), `unimportant` (Debian's `unimportant` and `end-of-life`, entries the security team " +
    "ignores or postpones or that get no DSA, Ubuntu's `negligible`).",
  example: 'high',
});

export const MatchStatus = z.enum(['fixed_available', 'no_fix']).openapi('VulnerabilityStatus', {
  description:
    '`fixed_available`: the distribution has a fix newer than the installed source version; `no_fix`: it has none yet.',
  example: 'fixed_available',
});

const trueFalse = (description: string) =>
  z
    .enum(['true', 'false'])
    .transform((v) => v === 'true')
    .optional()
    .openapi({ type: 'string', enum: ['true', 'false'], description });

const UrgencyFilter = z
  .string()
  .max(100)
  .transform((v) => v.split(','))
  .pipe(z.array(Urgency).min(1))
  .optional()
  .openapi({
    type: 'string',
    description:
      'Only these urgencies: one, or several separated by commas, exact (`critical,high`). Naming `unimportant` ' +
      'shows unimportant rows without `include_unimportant`.',
    example: 'critical,high',
  });

const IncludeUnimportant = trueFalse(
  '`true`: unimportant CVEs are listed too (left out by default, unless `urgency` names them).',
);

export const DeviceVulnerabilityQuery = PageQuery.extend({
  urgency: UrgencyFilter,
  status: MatchStatus.optional().openapi({ description: 'Only rows of this status.' }),
  include_unimportant: IncludeUnimportant,
});

export const OrganizationVulnerabilityBaseQuery = PageQuery.extend({
  urgency: UrgencyFilter.openapi({
    type: 'string',
    description:
      "Only CVEs of these urgencies (a CVE's is the worst of its rows): one, or several separated by commas, exact.",
    example: 'critical,high',
  }),
  status: MatchStatus.optional().openapi({ description: 'Only CVEs with at least one device in this status.' }),
  q: z
    .string()
    .min(1)
    .max(30)
    .regex(/^[A-Za-z0-9-]+$/, 'letters, digits and hyphens')
    .optional()
    .openapi({ description: 'Only CVEs whose id starts with this, ignoring case.', example: 'CVE-2024-' }),
  include_unimportant: IncludeUnimportant,
});

export const DeviceVulnerability = z
  .object({
    cve: z.string().openapi({ example: 'CVE-2023-38545' }),
    urgency: Urgency,
    status: MatchStatus,
    source: z.string().openapi({ description: 'The source package.', example: 'curl' }),
    installed_version: z
      .string()
      .openapi({ description: 'The installed source version.', example: '7.88.1-10+deb12u3' }),
    fixed_version: z
      .string()
      .nullable()
      .openapi({ description: 'null while there is no fix.', example: '7.88.1-10+deb12u4' }),
    binaries: z.array(z.string()).openapi({
      description: "The device's installed binary packages of that source.",
      example: ['curl', 'libcurl4'],
    }),
  })
  .openapi('DeviceVulnerability');

export const OrganizationVulnerability = z
  .object({
    cve: z.string().openapi({ example: 'CVE-2023-38545' }),
    urgency: Urgency,
    sources: z.array(z.string()).openapi({ description: 'The source packages it is found in.', example: ['curl'] }),
    devices_affected: z.number().int().min(0).openapi({ example: 412 }),
    devices_fix_available: z.number().int().min(0).openapi({
      description: 'Of those, the devices for which the distribution has a fix.',
      example: 400,
    }),
    first_seen_at: Timestamp.openapi({ description: 'When its first device of the organization became affected.' }),
  })
  .openapi('OrganizationVulnerability');

const VulnerabilityFeed = z
  .object({
    name: z.enum(['debian', 'ubuntu']),
    source: z.string().nullable().openapi({
      description: 'The configured URL (`VULN_FEED_DEBIAN_URL`, `VULN_FEED_UBUNTU_URL`); null before the first read.',
      example: 'https://security-tracker.debian.org/tracker/data/json',
    }),
    last_success_at: Timestamp.nullable().openapi({
      description: 'The last successful read (a 304 Not Modified included).',
    }),
    last_error: z.string().nullable().openapi({
      description: 'Why the last read failed (the last good data is kept); null after a success.',
      example: null,
    }),
    entries: z.number().int().min(0).openapi({
      description: 'The (CVE, source package, release) entries of the last good read.',
      example: 184230,
    }),
  })
  .openapi('VulnerabilityFeed');

export const VulnerabilityFeedList = z.object({ items: z.array(VulnerabilityFeed) }).openapi('VulnerabilityFeedList');
