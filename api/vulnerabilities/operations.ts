/** The declarations of the security data's operations (who may call, whose ids). */
import { operation } from '../access/declaration.ts';

export const listVulnerabilityFeeds = operation({ access: 'operator' });
