/**
 * The layout of the ISO folder (isoDir), shared by the build and the sweep:
 *   fleet-installer-<build id>.iso   a finished image (the row's file_name)
 *   .work-<build id>/                a build in progress: root/ (the files laid over the base
 *                                    image's root) and the partial image
 *   .dev-base-<backend>.iso          the cached development base image of a backend (no base
 *                                    image configured); .dev-base.iso: of earlier versions
 *   .dev-base*.iso.*                 their temporaries while being made
 * Every per-build name carries the build id, so concurrent builds never share a path and
 * the sweep can tell an orphan from a live build by asking for the row.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { join } from 'node:path';

/**
 * The device agent every image carries in /fleet/agent, from
 * jobs/iso/installer/agent/, with the modes they keep on the image; `install.sh late`
 * installs them into the new system.
 */
export const AGENT_FILES: Readonly<Record<string, number>> = {
  'fleet-agent': 0o755,
  'fleet-disk-key': 0o755,
  'fleet_agent_helpers.py': 0o644,
  'site.yml': 0o644,
  'fleet-agent.service': 0o644,
};

export function devBaseName(backend: string): string {
  return `.dev-base-${backend}.iso`;
}

export function finalFileName(buildId: string): string {
  return `fleet-installer-${buildId}.iso`;
}

export function workDirName(buildId: string): string {
  return `.work-${buildId}`;
}

export function workPaths(isoDir: string, buildId: string) {
  const dir = join(isoDir, workDirName(buildId));
  return { dir, staging: join(dir, 'root'), partial: join(dir, 'image.iso.partial') };
}

const perBuildName =
  /^(?:fleet-installer-|\.work-)([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?:\.iso)?$/;

/** The build id in a per-build name; null for any other entry. */
export function buildIdOf(name: string): string | null {
  return perBuildName.exec(name)?.[1] ?? null;
}

export function isDevBaseTemporary(name: string): boolean {
  return /^\.dev-base(?:-[a-z]+)?\.iso\./.test(name);
}

/** Size and hex SHA-256 of a file, streamed (images can be gigabytes). */
export async function digestFile(path: string): Promise<{ size: number; sha256: string }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { size, sha256: hash.digest('hex') };
}
