/**
 * Task `build_iso`: one personalized installer image. pending → running (progress from
 * the script's output) → completed, then the organization's older completed builds go,
 * file and row; or failed with a readable `error`, deleting nothing else.
 *
 * The task catches every build failure itself and returns normally, so Graphile Worker
 * deletes the job, and with it the sealed WLAN credentials, however the build ends. Only a
 * worker shutdown mid-build throws, which releases the job for a retry (the build goes
 * back to `pending`); on its last attempt even that fails the build and returns.
 */
import { chmod, copyFile, mkdir, rename, rm, unlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { JobHelpers, Task } from 'graphile-worker';
import { BuildIsoPayload, type BuildIsoPayloadType } from '../../api/iso_builds/job.ts';
import { buildTemplate, sessionUnusable } from '../../api/iso_builds/repo.ts';
import {
  type ClaimedBuild,
  claimBuild,
  completeBuild,
  failBuild,
  releaseBuild,
  setProgress,
} from '../../api/iso_builds/transitions.ts';
import { openWlan, type WlanCredentials } from '../../api/iso_builds/wlan_crypto.ts';
import { BOOT_FILES, installerFiles, InstallerConfigError, isBackend } from '../iso/installer_config.ts';
import { AGENT_FILES, devBaseName, digestFile, finalFileName, workPaths } from '../iso/iso_files.ts';
import { wlanNetplan } from '../iso/netplan.ts';
import { wlanKeyfile } from '../iso/nm_keyfile.ts';
import { runBuildScript } from '../iso/run_script.ts';
import { buildScriptOf, buildTimeoutOf } from '../iso/worker_config.ts';
import type { TaskDeps } from '../worker_deps.ts';

/** The scripts every image carries in /fleet (handshake.sh, install.sh) and /fleet/agent. */
const INSTALLER_SCRIPTS = fileURLToPath(new URL('../iso/installer/', import.meta.url));

/** A failure whose message is fit for the build's `error` field. */
class BuildFailure extends Error {}

/** The worker is shutting down: release the build for a retry. */
class BuildInterrupted extends Error {}

export function buildIsoTask(deps: TaskDeps): Task {
  return async (rawPayload, helpers) => {
    const parsed = BuildIsoPayload.safeParse(rawPayload);
    if (!parsed.success) {
      // Nothing to build from, and retrying will not change that: drop the job.
      deps.log.error('build_iso: payload not understood, job dropped', { job_id: helpers.job.id });
      return;
    }
    await runBuild(deps, parsed.data, helpers);
  };
}

async function runBuild(deps: TaskDeps, payload: BuildIsoPayloadType, helpers: JobHelpers): Promise<void> {
  const { log, config } = deps;
  const buildId = payload.build_id;
  const claim = await claimBuild(deps.sql, buildId);
  if (!claim) {
    log.info('build_iso: nothing to do, the build is gone or finished', { build_id: buildId });
    return;
  }
  const started = performance.now();
  const work = workPaths(config.isoDir, buildId);
  const fileName = finalFileName(buildId);
  const finalPath = join(config.isoDir, fileName);
  log.info('iso build started', {
    build_id: buildId,
    organization_id: claim.organization_id,
    attempt: helpers.job.attempts,
  });
  try {
    const image = await buildImage(deps, payload, claim, helpers);
    // Renamed into place only when complete and hashed: a half-written image is never served.
    await rename(image.path, finalPath);
    const result = await completeBuild(deps.sql, {
      buildId,
      organizationId: claim.organization_id,
      sizeBytes: image.size,
      sha256: image.sha256,
      fileName,
      developmentBase: image.developmentBase,
    });
    if (!result.completed) {
      // The row was deleted or failed by the sweep meanwhile: its file has no owner.
      await rm(finalPath, { force: true });
      log.warn('iso build finished but its row is gone or no longer running; file discarded', { build_id: buildId });
      return;
    }
    for (const name of result.replacedFiles) await removeFile(deps, join(config.isoDir, name));
    log.info('iso build completed', {
      build_id: buildId,
      size_bytes: image.size,
      sha256: image.sha256,
      replaced: result.replacedFiles.length,
      ms: Math.round(performance.now() - started),
    });
  } catch (err) {
    // Renamed but not recorded as completed: no row will ever own this file.
    await rm(finalPath, { force: true });
    if (err instanceof BuildInterrupted && helpers.job.attempts < helpers.job.max_attempts) {
      await releaseBuild(deps.sql, buildId);
      log.warn('iso build interrupted by worker shutdown; released for a retry', { build_id: buildId });
      throw err;
    }
    const message =
      err instanceof BuildFailure || err instanceof BuildInterrupted
        ? err.message
        : `unexpected error on the build host: ${(err as Error)?.message ?? String(err)}`;
    const failed = await failBuild(deps.sql, buildId, message);
    log.warn('iso build failed', { build_id: buildId, error: message, recorded: failed });
  } finally {
    // The staging folder holds the plaintext WLAN profile: it never outlives the attempt.
    await rm(work.dir, { recursive: true, force: true });
  }
}

async function buildImage(
  deps: TaskDeps,
  payload: BuildIsoPayloadType,
  claim: ClaimedBuild,
  helpers: JobHelpers,
): Promise<{ path: string; size: number; sha256: string; developmentBase: boolean }> {
  const { config, log } = deps;
  const buildId = payload.build_id;
  // A session-bound image carries the session id, never the organization's code.
  let credential = claim.activation_code;
  if (claim.enrollment_session_id) {
    const why = await sessionUnusable(deps.sql, claim.enrollment_session_id!);
    if (why) {
      throw new BuildFailure(
        `the enrollment session of this build is ${why}: an image bound to it could not activate any device`,
      );
    }
    credential = claim.enrollment_session_id;
  }
  if (!credential) throw new BuildFailure('the organization has no activation code to write into the image');
  const template = await buildTemplate(deps.sql, claim.template_id);
  const backend = template.backend;
  if (!isBackend(backend)) throw new BuildFailure(`no installer setup is known for backend ${backend}`);
  let setup: Record<string, string>;
  try {
    setup = installerFiles(backend, template);
  } catch (err) {
    if (err instanceof InstallerConfigError) throw new BuildFailure(err.message);
    throw err;
  }
  let wlan: WlanCredentials | null = null;
  if (payload.wlan) {
    try {
      wlan = await openWlan(config.wlanKey, buildId, payload.wlan);
    } catch {
      // Never the underlying message: nothing about the credentials reaches a log or the row.
      throw new BuildFailure(
        "the WLAN credentials could not be decrypted: the build host's ISO_ENCRYPTION_KEY differs from the API's",
      );
    }
  }

  const work = workPaths(config.isoDir, buildId);
  await mkdir(config.isoDir, { recursive: true, mode: 0o700 });
  await rm(work.dir, { recursive: true, force: true }); // leftovers of an interrupted attempt
  const fleetDir = join(work.staging, 'fleet');
  await mkdir(fleetDir, { recursive: true, mode: 0o700 });
  await chmod(work.dir, 0o700);
  await chmod(work.staging, 0o700);
  const provisioning = {
    schema_version: 2,
    build_id: buildId,
    organization_id: claim.organization_id,
    credential,
    template_id: claim.template_id,
    base_url: config.publicBaseUrl,
    api_url: `${config.publicBaseUrl}/api/v1`,
    backend,
    wlan_profile: wlan ? '/fleet/wlan.nmconnection' : null,
    built_at: new Date().toISOString(),
  };
  await writeFile(join(fleetDir, 'provisioning.json'), JSON.stringify(provisioning, null, 2) + '\n', { mode: 0o600 });
  for (const script of ['handshake.sh', 'install.sh']) {
    await copyFile(join(INSTALLER_SCRIPTS, script), join(fleetDir, script));
    await chmod(join(fleetDir, script), 0o755);
  }
  await mkdir(join(fleetDir, 'agent'), { mode: 0o700 });
  for (const [file, mode] of Object.entries(AGENT_FILES)) {
    await copyFile(join(INSTALLER_SCRIPTS, 'agent', file), join(fleetDir, 'agent', file));
    await chmod(join(fleetDir, 'agent', file), mode);
  }
  for (const [path, text] of Object.entries(setup)) {
    await mkdir(dirname(join(work.staging, path)), { recursive: true, mode: 0o700 });
    await writeFile(join(work.staging, path), text, { mode: 0o644 });
  }
  if (wlan) {
    await writeFile(join(fleetDir, 'wlan.nmconnection'), wlanKeyfile(wlan, crypto.randomUUID()), { mode: 0o600 });
    // The same WLAN for a system with netplan alone (install.sh picks what the target reads).
    await writeFile(join(fleetDir, 'wlan.netplan.yaml'), wlanNetplan(wlan), { mode: 0o600 });
    wlan = null;
  }
  const base = config.isoBaseImages?.[backend] ?? config.isoBaseImage ?? '';

  let reported = 0;
  let progressWrites: Promise<unknown> = Promise.resolve();
  const outcome = await runBuildScript({
    script: buildScriptOf(config),
    env: {
      FLEET_ISO_BASE: base,
      FLEET_ISO_BACKEND: backend,
      FLEET_ISO_BOOT_FILES: `${BOOT_FILES[backend].kernel} ${BOOT_FILES[backend].initrd}`,
      FLEET_ISO_DEV_BASE: join(config.isoDir, devBaseName(backend)),
      FLEET_ISO_STAGING: work.staging,
      FLEET_ISO_OUTPUT: work.partial,
    },
    timeoutMs: buildTimeoutOf(config),
    signal: helpers.abortSignal,
    onProgress(percent) {
      // 100 means "completed", which only the completion statement may say.
      const value = Math.min(99, percent);
      if (value <= reported) return;
      reported = value;
      progressWrites = progressWrites
        .then(() => setProgress(deps.sql, buildId, value))
        .catch((err) => log.warn('iso build progress not recorded', { build_id: buildId, error: String(err) }));
    },
    onWarning(text) {
      log.warn(`iso build: ${text}`, { build_id: buildId });
    },
    onOutput(line) {
      log.debug('iso build script', { build_id: buildId, line });
    },
  });
  await progressWrites;
  // The plaintext profile has served its purpose once the image is written.
  await rm(work.staging, { recursive: true, force: true });
  if (outcome.kind === 'aborted') throw new BuildInterrupted('the build was interrupted by a worker shutdown');
  if (outcome.kind !== 'ok') throw new BuildFailure(outcome.message);
  const digest = await digestFile(work.partial).catch(() => {
    throw new BuildFailure('the build script reported success but wrote no image');
  });
  // No installer image for the backend: the script used the development base image (not bootable).
  return { path: work.partial, ...digest, developmentBase: base === '' };
}

async function removeFile(deps: TaskDeps, path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (err) {
    // ENOENT: already gone. Anything else is left to the sweep's orphan clean-up.
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
      deps.log.warn('iso file not removed', { path, error: String(err) });
    }
  }
}
