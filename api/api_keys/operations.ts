/**
 * The declarations of the organization API key operations (who may call, whose ids, what is audited):
 * the API routes are defined with them, and the portal's pages are checked with the same
 * objects.
 */
import { operation } from '../access/declaration.ts';

export const createApiKey = operation({
  access: 'org_admin',
  tenant: { param: { id: 'organization' } },
  audit: 'api_key.create',
});
export const listApiKeys = operation({ access: 'org_admin', tenant: { param: { id: 'organization' } } });
export const revokeApiKey = operation({
  access: 'org_admin',
  tenant: { param: { id: 'api_key' } },
  audit: 'api_key.revoke',
});
