/**
 * The role repository of the device-agent tests: a git repository of fixture roles, one per
 * seeded role name, that write a marker file for `present` (holding the order's optionen),
 * remove it for `absent`, and fail on demand (FIXTURE_FAIL names the roles, FIXTURE_MARKERS
 * the markers' folder).
 */
import { spawnSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'vitest';

/** The role names of the seeded catalog and templates. */
export const ROLES = [
  'base',
  'desktop',
  'provisioning_agent',
  'firefox',
  'libreoffice',
  'onlyoffice',
  'qgis',
  'guest_session',
];

/** A fixture role: a marker for present, none for absent, a failure when FIXTURE_FAIL names it. */
const ROLE_TASKS = `- name: Fail on demand
  ansible.builtin.fail:
    msg: "fixture role {{ role_name }} fails on demand"
  when: role_name in lookup('env', 'FIXTURE_FAIL').split(',')
- name: Present
  ansible.builtin.copy:
    dest: "{{ lookup('env', 'FIXTURE_MARKERS') }}/{{ role_name }}"
    content: "{{ fleet_optionen | to_json }}\\n"
    mode: "0644"
  when: fleet_state == 'present'
- name: Absent
  ansible.builtin.file:
    path: "{{ lookup('env', 'FIXTURE_MARKERS') }}/{{ role_name }}"
    state: absent
  when: fleet_state == 'absent'
`;

/** git in `cwd` with a fixed author; the test fails with git's message when it does. */
export function git(cwd: string, ...args: string[]): string {
  const out = spawnSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@t',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@t',
    },
  });
  expect(out.status, out.stderr).toBe(0);
  return out.stdout;
}

/** A new repository in `repo` with one commit: every fixture role under `roles/`. */
export async function makeRoleRepository(repo: string): Promise<void> {
  for (const role of ROLES) {
    await mkdir(join(repo, 'roles', role, 'tasks'), { recursive: true });
    await writeFile(join(repo, 'roles', role, 'tasks', 'main.yml'), ROLE_TASKS);
  }
  git(repo, 'init', '-q');
  git(repo, 'add', '.');
  git(repo, 'commit', '-qm', 'fixture roles');
}
