/**
 * The Ubuntu image's autoinstall file against subiquity's own JSON schema (the one the
 * installer validates with), vendored from canonical/subiquity at tag 24.04.1 and at main
 * (test/jobs/fixtures/subiquity/README.md names the commits).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { type InstallTemplate, ubuntuAutoinstall } from '../../jobs/iso/installer_config.ts';

const SCHEMAS = ['24.04.1', 'main'].map((version) => ({
  version,
  schema: JSON.parse(
    readFileSync(join(import.meta.dirname, `fixtures/subiquity/autoinstall-schema-${version}.json`), 'utf8'),
  ) as { properties: Record<string, unknown> },
}));

function validator(schema: object) {
  const ajv = new Ajv({ allErrors: true, strict: false });
  ajv.addFormat('uri', (value: string) => URL.canParse(value));
  return ajv.compile(schema);
}

const template = (scheme: string, packages: string[] = []): InstallTemplate => ({
  id: '6d1f4c2a-3b5e-4f70-9a1d-0c2e8b7a5d02',
  backend: 'ubuntu',
  partitioning: { scheme, root_filesystem: 'ext4' },
  installation: { locale: 'de_DE.UTF-8', keyboard: 'de', timezone: 'Europe/Berlin', packages },
});

describe.each(SCHEMAS)("subiquity's autoinstall schema ($version)", ({ schema }) => {
  const validate = validator(schema);

  it.each([
    ['single', []],
    ['luks-lvm', ['vim', 'htop']],
  ])('accepts the autoinstall of a %s template', (scheme, packages) => {
    const config = parseYaml(ubuntuAutoinstall(template(scheme as string, packages as string[]))).autoinstall;
    const valid = validate(config);
    expect(validate.errors ?? [], JSON.stringify(validate.errors)).toEqual([]);
    expect(valid).toBe(true);
    // Subiquity refuses top-level keys it does not know (the schema itself allows them).
    expect(Object.keys(config).filter((key) => !(key in schema.properties))).toEqual([]);
  });

  it('refuses a broken one, so the check above can fail', () => {
    const config = parseYaml(ubuntuAutoinstall(template('single'))).autoinstall;
    expect(validate({ ...config, version: '1', 'early-commands': 'sh x' })).toBe(false);
    expect(validate({ ...config, 'interactive-sections': 'storage' })).toBe(false);
  });
});
