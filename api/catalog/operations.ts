/**
 * The declarations of the order catalog operations (who may call, whose ids, what is audited):
 * the API routes are defined with them, and the portal's pages are checked with the same
 * objects.
 */
import { operation } from '../access/declaration.ts';

/** The scopes a Merkmal is selected, deselected or unset at, by their path segment. */
export const selectionScopes = { devices: 'device', 'org-units': 'org_unit', groups: 'group' } as const;
export type SelectionScope = keyof typeof selectionScopes;
export type SelectionVerb = 'select' | 'deselect' | 'unset';

const selection = (kind: (typeof selectionScopes)[SelectionScope], audit: `catalog.${SelectionVerb}`) =>
  operation({ access: 'org_admin', tenant: { param: { id: kind, merkmal: null } }, audit });

/** Select, deselect and unset at each scope: one operation each. */
export const selectionOperations = Object.fromEntries(
  Object.entries(selectionScopes).map(([scope, kind]) => [
    scope,
    {
      select: selection(kind, 'catalog.select'),
      deselect: selection(kind, 'catalog.deselect'),
      unset: selection(kind, 'catalog.unset'),
    },
  ]),
) as Record<SelectionScope, Record<SelectionVerb, ReturnType<typeof selection>>>;

export const getDeviceCatalog = operation({ access: 'org_viewer', tenant: { param: { id: 'device' } } });
export const explainDeviceMerkmal = operation({
  access: 'org_viewer',
  tenant: { param: { id: 'device', merkmal: null } },
});
export const listOrgUnitCatalog = operation({ access: 'org_viewer', tenant: { param: { id: 'org_unit' } } });
export const listGroupCatalog = operation({ access: 'org_viewer', tenant: { param: { id: 'group' } } });
