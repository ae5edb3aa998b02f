/**
 * The unattended setup written into a personalized image (jobs/iso/README.md): per
 * backend the installer's answer file and the boot entries that start it by
 * default, plus the paths of the kernel and initrd those entries boot, which the build checks
 * in the base image. Pure: no I/O, so the generated text has unit tests of its own.
 *
 * Debian: partitioning is decided at install time. d-i's `partman/early_command` (run when
 * the network is up and before partman touches a disk; `preseed/early_command` would run
 * before the network when the preseed comes from the medium) runs the handshake and feeds
 * the blueprint's partitioning to debconf (/fleet/install.sh). Ubuntu: an Ubuntu image is
 * always bound to a template (an unbound image installs the preferred backend's default),
 * so the build writes that template's storage layout, and the early command stops the
 * installation if the blueprint disagrees.
 *
 * Unattended means every question d-i asks at priority=critical is answered here or by the
 * early command; the one question left on purpose is the disk passphrase of `luks-lvm`.
 * Every d-i key written here exists in Debian 12's installer (test/jobs/installer_keys.test.ts
 * holds them against the installer's templates and the installation guide's example).
 */

/** What the device agent needs on the installed system, before the template's own packages. */
const AGENT_PACKAGES = ['curl', 'git', 'python3', 'python3-apt', 'ansible-core'] as const;

export type Backend = 'debian' | 'ubuntu';

export interface InstallTemplate {
  id: string;
  backend: string;
  partitioning: { scheme: string; root_filesystem: string; encryption?: { unlock: string } | null };
  installation: Record<string, unknown>;
}

/** clevis with its TPM pin and the initramfs hook that unlocks at boot, for `unlock: tpm2`. */
const TPM_PACKAGES = ['clevis', 'clevis-luks', 'clevis-tpm2', 'clevis-initramfs'] as const;

function unlockPackages(template: InstallTemplate): string[] {
  return template.partitioning.encryption?.unlock === 'tpm2' ? [...TPM_PACKAGES] : [];
}

/** A failure in the template's data that no installer could use; its message is for the build's `error`. */
export class InstallerConfigError extends Error {}

/** Kernel and initrd the boot entries start, per backend (as on the Debian 12 and Ubuntu 24.04 images). */
export const BOOT_FILES: Record<Backend, { kernel: string; initrd: string }> = {
  debian: { kernel: '/install.amd/vmlinuz', initrd: '/install.amd/initrd.gz' },
  ubuntu: { kernel: '/casper/vmlinuz', initrd: '/casper/initrd' },
};

const TOKEN = /^[A-Za-z0-9_.@+:/-]{1,100}$/;

function token(template: InstallTemplate, field: string, fallback: string): string {
  const value = template.installation[field] ?? fallback;
  if (typeof value !== 'string' || !TOKEN.test(value)) {
    throw new InstallerConfigError(`template ${template.id}: installation.${field} is not usable by an installer`);
  }
  return value;
}

function packages(template: InstallTemplate): string[] {
  const list = template.installation['packages'] ?? [];
  if (!Array.isArray(list) || !list.every((p) => typeof p === 'string' && /^[a-z0-9][a-z0-9.+-]*$/.test(p))) {
    throw new InstallerConfigError(`template ${template.id}: installation.packages must be a list of package names`);
  }
  return list as string[];
}

function partitioning(template: InstallTemplate): { scheme: 'single' | 'luks-lvm'; fs: string } {
  const { scheme, root_filesystem: fs } = template.partitioning;
  if (scheme !== 'single' && scheme !== 'luks-lvm') {
    throw new InstallerConfigError(`template ${template.id}: partitioning scheme '${scheme}' is not supported`);
  }
  if (!['ext4', 'ext3', 'xfs', 'btrfs'].includes(fs)) {
    throw new InstallerConfigError(`template ${template.id}: root file system '${fs}' is not supported`);
  }
  if (template.backend === 'ubuntu' && scheme === 'single' && fs !== 'ext4') {
    throw new InstallerConfigError(`template ${template.id}: the Ubuntu installer's direct layout makes ext4 only`);
  }
  return { scheme, fs };
}

const FLEET = '/cdrom/fleet';
const DEBIAN_AUTO = `auto=true priority=critical preseed/file=/cdrom/preseed.cfg`;

export function debianPreseed(template: InstallTemplate): string {
  const locale = token(template, 'locale', 'en_US.UTF-8');
  const keyboard = token(template, 'keyboard', 'us');
  const timezone = token(template, 'timezone', 'Etc/UTC');
  const { scheme, fs } = partitioning(template);
  const pkgs = [...AGENT_PACKAGES, ...unlockPackages(template), ...packages(template)];
  return [
    '# Fleet: unattended Debian installation, written by the build host.',
    '# The handshake (/fleet/handshake.sh) runs as partman/early_command, after the network is',
    '# up and before any disk is touched; unless it succeeds the installation stops there. It then',
    "# sets partman's answers from the Runtime Blueprint (the ones below are this image's template).",
    `d-i debian-installer/locale string ${locale}`,
    `d-i keyboard-configuration/xkb-keymap select ${keyboard}`,
    'd-i netcfg/choose_interface select auto',
    'd-i netcfg/get_hostname string fleet-device',
    'd-i netcfg/get_domain string',
    'd-i hw-detect/load_firmware boolean true',
    // The mirror is d-i's default for the locale's country; a site with a mirror of its own
    // preseeds mirror/country manual and mirror/http/hostname (the VM test does).
    'd-i mirror/http/proxy string',
    '# No interactive account: the agent manages access. user-setup (1.95) asks for a root password',
    "# when the crypted one is empty or '!', so root gets '*': no password matches it (locked).",
    'd-i passwd/root-login boolean true',
    'd-i passwd/root-password-crypted password *',
    'd-i passwd/make-user boolean false',
    'd-i clock-setup/utc boolean true',
    `d-i time/zone string ${timezone}`,
    'd-i clock-setup/ntp boolean true',
    `d-i partman/early_command string sh ${FLEET}/install.sh debian-early`,
    `d-i partman-auto/method string ${scheme === 'single' ? 'regular' : 'crypto'}`,
    'd-i partman-auto/choose_recipe select atomic',
    `d-i partman/default_filesystem string ${fs}`,
    'd-i partman-auto-lvm/guided_size string max',
    '# An encrypted install would otherwise first overwrite the whole disk with random data (hours).',
    'd-i partman-auto-crypto/erase_disks boolean false',
    'd-i partman-md/device_remove_md boolean true',
    'd-i partman-lvm/device_remove_lvm boolean true',
    'd-i partman-lvm/confirm boolean true',
    'd-i partman-lvm/confirm_nooverwrite boolean true',
    'd-i partman-efi/non_efi_system boolean true',
    'd-i partman-partitioning/confirm_write_new_label boolean true',
    'd-i partman/choose_partition select finish',
    'd-i partman/confirm boolean true',
    'd-i partman/confirm_nooverwrite boolean true',
    '# partman-crypto/passphrase and passphrase-again: the one-time install passphrase of the resolve,',
    '# set in debconf by the early command (never in a file); the late command escrows a recovery',
    "# key and removes the passphrase's key slot.",
    'd-i apt-setup/cdrom/set-first boolean false',
    'tasksel tasksel/first multiselect standard',
    `d-i pkgsel/include string ${pkgs.join(' ')}`,
    'd-i pkgsel/upgrade select safe-upgrade',
    'popularity-contest popularity-contest/participate boolean false',
    'd-i grub-installer/only_debian boolean true',
    'd-i grub-installer/bootdev string default',
    `d-i preseed/late_command string sh ${FLEET}/install.sh late /target`,
    'd-i finish-install/reboot_in_progress note',
    '',
  ].join('\n');
}

function debianIsolinuxCfg(): string {
  const { kernel, initrd } = BOOT_FILES.debian;
  return [
    '# Fleet: the automatic installation boots at once (hold Shift for the menu).',
    'default fleet',
    'prompt 0',
    'timeout 0',
    'label fleet',
    '  menu label Fleet: automatic installation',
    `  kernel ${kernel}`,
    `  append ${DEBIAN_AUTO} vga=788 initrd=${initrd} --- quiet`,
    'label manual',
    '  menu label Debian installer (manual, not provisioned)',
    `  kernel ${kernel}`,
    `  append vga=788 initrd=${initrd} --- quiet`,
    '',
  ].join('\n');
}

function grubCfg(entries: Array<{ title: string; args: string }>, backend: Backend): string {
  const { kernel, initrd } = BOOT_FILES[backend];
  return [
    '# Fleet: the first entry, the automatic installation, starts after 5 seconds.',
    'set default=0',
    'set timeout=5',
    ...entries.flatMap((e) => [
      `menuentry '${e.title}' {`,
      // As the installers' own menus do: Ubuntu keeps the firmware's video mode, Debian sets a black background.
      backend === 'ubuntu' ? '  set gfxpayload=keep' : '  set background_color=black',
      `  linux ${kernel} ${e.args}`,
      `  initrd ${initrd}`,
      '}',
    ]),
    '',
  ].join('\n');
}

function debianGrubCfg(): string {
  return grubCfg(
    [
      { title: 'Fleet: automatic installation', args: `${DEBIAN_AUTO} vga=788 --- quiet` },
      { title: 'Debian installer (manual, not provisioned)', args: 'vga=788 --- quiet' },
    ],
    'debian',
  );
}

function ubuntuGrubCfg(): string {
  return grubCfg(
    [
      { title: 'Fleet: automatic installation', args: 'autoinstall ---' },
      { title: 'Ubuntu installer (manual, not provisioned)', args: '---' },
    ],
    'ubuntu',
  );
}

const q = (s: string) => JSON.stringify(s);

/** Subiquity's autoinstall file, found at the root of the medium by Ubuntu 24.04. */
export function ubuntuAutoinstall(template: InstallTemplate): string {
  const locale = token(template, 'locale', 'en_US.UTF-8');
  const keyboard = token(template, 'keyboard', 'us');
  const timezone = token(template, 'timezone', 'Etc/UTC');
  const { scheme, fs } = partitioning(template);
  // wpasupplicant: a WLAN profile given as netplan needs it on a server install.
  const pkgs = [...AGENT_PACKAGES, 'wpasupplicant', ...unlockPackages(template), ...packages(template)];
  // An `lvm` layout with `password` is LVM on LUKS (subiquity 24.04.1,
  // doc/reference/autoinstall-reference.rst:418: "When using the ``lvm`` layout, LUKS encryption
  // can be enabled by supplying a password"; subiquity/server/controllers/filesystem.py:1412-1419:
  // a `password` makes the capability LVM_LUKS). The image holds no passphrase: the early
  // command writes the resolve's one-time install passphrase into /autoinstall.yaml, which
  // subiquity reads again after the early commands (autoinstall-reference.rst:100: "the file is
  // re-read after the ``early-commands`` have run to allow them to alter the configuration";
  // subiquity/server/server.py: select_autoinstall copies the medium's /cdrom/autoinstall.yaml
  // to /autoinstall.yaml, line 916, and start() loads that file, runs the early commands and
  // loads it again, lines 981-993; the same on main). A late command still fails the
  // installation when the root ended up unencrypted.
  const storage =
    scheme === 'single'
      ? ['  storage:', '    layout:', '      name: direct']
      : [
          '  storage:',
          '    layout:',
          '      name: lvm',
          '      # password: the install passphrase, set by the early command',
        ];
  const late = [
    ...(scheme === 'luks-lvm' ? [`sh ${FLEET}/install.sh ubuntu-check-crypt /target`] : []),
    `sh ${FLEET}/install.sh late /target`,
  ];
  return [
    '# Fleet: unattended Ubuntu installation, written by the build host. The early command runs',
    '# the handshake (/fleet/handshake.sh) and stops the installation unless it succeeds.',
    'autoinstall:',
    '  version: 1',
    `  locale: ${q(locale)}`,
    '  keyboard:',
    `    layout: ${q(keyboard)}`,
    `  timezone: ${q(timezone)}`,
    '  # No interactive account: root stays locked, the agent manages access.',
    '  user-data:',
    '    disable_root: true',
    '  ssh:',
    '    install-server: false',
    ...storage,
    `  packages: [${pkgs.map(q).join(', ')}]`,
    '  early-commands:',
    `    - ${q(`sh ${FLEET}/install.sh ubuntu-early ${scheme} ${fs}`)}`,
    '  late-commands:',
    ...late.map((command) => `    - ${q(command)}`),
    '  shutdown: reboot',
    '',
  ].join('\n');
}

/** Files to lay over the base image's root for the backend (path in the image → content). */
export function installerFiles(backend: Backend, template: InstallTemplate): Record<string, string> {
  if (backend === 'debian') {
    return {
      'preseed.cfg': debianPreseed(template),
      'isolinux/isolinux.cfg': debianIsolinuxCfg(),
      'boot/grub/grub.cfg': debianGrubCfg(),
    };
  }
  return {
    'autoinstall.yaml': ubuntuAutoinstall(template),
    'boot/grub/grub.cfg': ubuntuGrubCfg(),
  };
}

export function isBackend(value: string): value is Backend {
  return value === 'debian' || value === 'ubuntu';
}
