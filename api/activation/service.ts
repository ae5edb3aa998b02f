/**
 * The installer's handshake (the device side: jobs/iso/README.md): activate (credential → device and the
 * templates it may use) and resolve (template → Runtime Blueprint with a bootstrap token).
 * Each runs in one transaction, so a refusal writes nothing.
 */
import type { Sql } from '../db/client.ts';
import { storeHardware } from '../devices/lifecycle_repo.ts';
import { ApiError, notFound } from '../http/errors.ts';
import { randomToken } from '../http/crypto.ts';
import { diskEncryptionUnavailable } from '../disk_keys/service.ts';
import type { GuessLimit } from './rate_limit.ts';
import { getPreferredDefaultTemplate, getTemplate, serializeTemplate } from '../templates/repo.ts';
import * as repo from './repo.ts';
import type { ActivateInput, ActivationType, ResolveInput, RuntimeBlueprintType } from './schemas.ts';

/**
 * A managed device is re-imaged only after an admin's reprovision: the organization's
 * code (printed into every image) must never be enough to move or re-assign it.
 */
function deviceAlreadyEnrolled(): ApiError {
  return new ApiError(
    'device_already_enrolled',
    'this device is under management (it holds an agent secret); an admin must reprovision it before it is installed again',
  );
}

/**
 * The refusal of a credential, after the transaction that looked for it ended. One message
 * for every refusal: it must not tell a guesser what exists. Whether the credential was
 * known (a session revoked, expired or used up) only decides whether it counts as a guess
 * against the address (rate_limit.ts), never the answer; at the limit both are 429.
 */
async function refuseCredential(sql: Sql, code: string, limit: GuessLimit): Promise<never> {
  if (await repo.isKnownSession(sql, code)) await limit.assertOpen(sql);
  else await limit.countGuess();
  throw new ApiError(
    'invalid_activation_code',
    'the activation code is not valid, or the enrollment session is revoked, expired or used up',
  );
}

/**
 * `limit`: the guessing limit of the caller's address. A known credential reads it again
 * in the transaction that uses the credential, so an address that reached the limit while
 * this attempt was under way gets 429 and nothing is written.
 */
export async function activate(sql: Sql, input: ActivateInput, limit: GuessLimit): Promise<ActivationType> {
  const activated = await sql.begin(async (tx) => {
    const credential = await repo.claimCredential(tx, input.code);
    if (credential === null) return null;
    await limit.assertOpen(tx);
    const deviceId = await repo.upsertActivatedDevice(tx, {
      organizationId: credential.organizationId,
      serial: input.serial,
      hostname: input.hostname ?? null,
      sessionId: credential.kind === 'session' ? credential.sessionId : null,
    });
    // Throwing rolls back the session's quota claim too.
    if (deviceId === null) throw deviceAlreadyEnrolled();
    if (input.hardware) await storeHardware(tx, deviceId, input.hardware);
    return { credential, deviceId };
  });
  if (activated === null) return refuseCredential(sql, input.code, limit);
  const { credential, deviceId } = activated;

  if (credential.kind === 'session') {
    // The session's template is the only choice, so it is the default for this installer.
    const template = await getTemplate(sql, credential.templateId);
    return {
      organization_id: credential.organizationId,
      device_id: deviceId,
      templates: [{ ...serializeTemplate(template!), is_default: true }],
      default_template_id: credential.templateId,
    };
  }
  const [templates, preferredDefault] = await Promise.all([repo.allTemplates(sql), getPreferredDefaultTemplate(sql)]);
  return {
    organization_id: credential.organizationId,
    device_id: deviceId,
    templates: templates.map(serializeTemplate),
    default_template_id: preferredDefault.id,
  };
}

/**
 * Checks the credential, the template it allows and the device, records the assignment
 * and issues a fresh bootstrap token. An archived device is no device of the credential
 * any more (activation would create a new one for its serial): 404, like an unknown id.
 */
export async function resolve(
  sql: Sql,
  templateId: string,
  input: ResolveInput,
  baseUrl: string,
  limit: GuessLimit,
  diskKeysAvailable: boolean,
): Promise<RuntimeBlueprintType> {
  const blueprint = await sql.begin(async (tx): Promise<RuntimeBlueprintType | null> => {
    const credential = await repo.checkCredential(tx, input.code);
    if (credential === null) return null;
    await limit.assertOpen(tx);
    const template = await getTemplate(tx, templateId);
    if (!template) throw notFound('template', templateId);
    // Without the key no recovery key could be escrowed: the disk would end with a key nobody holds.
    if (template.partitioning.encryption && !diskKeysAvailable) throw diskEncryptionUnavailable();
    if (credential.kind === 'session' && credential.templateId !== template.id) {
      throw new ApiError(
        'template_not_allowed',
        `the enrollment session only offers template ${credential.templateId}`,
      );
    }
    const assignment = await repo.assignTemplate(tx, {
      deviceId: input.device_id,
      organizationId: credential.organizationId,
      templateId: template.id,
    });
    if (assignment === 'not_found') throw notFound('device', input.device_id);
    if (assignment === 'enrolled') throw deviceAlreadyEnrolled();
    const deviceId = input.device_id;
    const bootstrapToken = await repo.issueBootstrapToken(tx, deviceId);
    const [context, blueprints] = await Promise.all([
      repo.templateContext(tx, template),
      repo.templateBlueprints(tx, template.id),
    ]);
    return {
      device_id: deviceId,
      organization_id: credential.organizationId,
      template: { id: template.id, name: template.name },
      workspace: context.workspace,
      backend: context.backend,
      blueprints,
      installation: template.installation,
      partitioning: template.partitioning,
      // 32 random bytes: base64url needs no quoting in a preseed or a YAML file.
      disk_encryption: template.partitioning.encryption ? { install_passphrase: randomToken(32) } : null,
      agent: { base_url: baseUrl, device_id: deviceId, bootstrap_token: bootstrapToken },
    };
  });
  // Counted outside the transaction: a guess must stay counted, and must not hold a
  // second connection of the pool while its transaction holds the first.
  return blueprint ?? refuseCredential(sql, input.code, limit);
}
