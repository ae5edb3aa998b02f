/** Request and response schemas of organizations and their activation code. */
import { z } from '@hono/zod-openapi';
import { Timestamp, Uuid } from '../http/openapi.ts';

const contactFields = {
  kontakt_name: z.string().max(200).nullable().openapi({ example: 'Erika Mustermann' }),
  adresse: z.string().max(2000).nullable().openapi({ example: 'Musterstraße 1, 12345 Musterstadt' }),
  telefon: z.string().max(100).nullable().openapi({ example: '+49 30 1234567' }),
  kontakt_email: z.email().max(254).nullable().openapi({ example: 'it@example.org' }),
  notizen: z.string().max(10_000).nullable().openapi({ example: 'Rollout ab Q1' }),
};

const name = z.string().trim().min(1).max(200).openapi({ example: 'Stadtverwaltung Musterstadt' });

export const OrganizationCreate = z
  .strictObject({
    name,
    kontakt_name: contactFields.kontakt_name.optional(),
    adresse: contactFields.adresse.optional(),
    telefon: contactFields.telefon.optional(),
    kontakt_email: contactFields.kontakt_email.optional(),
    notizen: contactFields.notizen.optional(),
  })
  .openapi('OrganizationCreate');

export const OrganizationPatch = OrganizationCreate.partial().openapi('OrganizationPatch');

export const Organization = z
  .object({
    id: Uuid,
    name: z.string(),
    ...contactFields,
    default_oe_id: Uuid.openapi({ description: 'The protected org unit "Neue Geräte".' }),
    created_at: Timestamp,
  })
  .openapi('Organization');

export const ActivationCode = z
  .object({
    code: z.string().openapi({ example: 'K7M2Q-4XW9D-PZ3RT-8HBNC' }),
    created_at: Timestamp,
  })
  .openapi('ActivationCode');

export type OrganizationCreateInput = z.infer<typeof OrganizationCreate>;
export type OrganizationPatchInput = z.infer<typeof OrganizationPatch>;
