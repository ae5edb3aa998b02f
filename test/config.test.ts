/** The environment schema (api/config.ts): defaults, and a bad value named at start-up. */
import { cpus } from 'node:os';
import { Buffer } from 'node:buffer';
import { describe, expect, it } from 'vitest';
import { ConfigError, configWarnings, DEFAULT_POOL_SIZE, loadEnv } from '../api/config.ts';

describe('DATABASE_POOL_SIZE', () => {
  it('defaults to twice the cores, from 4 to 10', () => {
    expect(DEFAULT_POOL_SIZE).toBe(Math.min(10, Math.max(4, 2 * cpus().length)));
    expect(loadEnv({}).DATABASE_POOL_SIZE).toBe(DEFAULT_POOL_SIZE);
    expect(loadEnv({ DATABASE_POOL_SIZE: '' }).DATABASE_POOL_SIZE).toBe(DEFAULT_POOL_SIZE);
  });

  it('takes an explicit size', () => {
    expect(loadEnv({ DATABASE_POOL_SIZE: '25' }).DATABASE_POOL_SIZE).toBe(25);
  });

  it.each(['0', '-1', '2.5', 'viele', '201'])('refuses %j, naming the variable', (value) => {
    expect(() => loadEnv({ DATABASE_POOL_SIZE: value })).toThrow(ConfigError);
    expect(() => loadEnv({ DATABASE_POOL_SIZE: value })).toThrow(/DATABASE_POOL_SIZE/);
  });
});

describe('PORT', () => {
  it('takes a decimal port from 1 to 65535, default 3000', () => {
    expect(loadEnv({}).PORT).toBe(3000);
    expect(loadEnv({ PORT: '8080' }).PORT).toBe(8080);
    expect(loadEnv({ PORT: '1' }).PORT).toBe(1);
    expect(loadEnv({ PORT: '65535' }).PORT).toBe(65535);
  });

  it.each([' 3000', '3000 ', '0x10', '1e3', '0', '65536', '-1', '80.0', '+80', 'eighty'])(
    'refuses %j with one line naming PORT',
    (value) => {
      let error: unknown;
      try {
        loadEnv({ PORT: value });
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toMatch(/^invalid configuration: PORT: /);
      expect((error as Error).message).not.toContain('\n');
    },
  );

  it('reads the other integers as strictly', () => {
    expect(() => loadEnv({ AGENT_POLL_INTERVAL_SECONDS: '0x20' })).toThrow(/AGENT_POLL_INTERVAL_SECONDS/);
    expect(() => loadEnv({ WORKER_CONCURRENCY: ' 2' })).toThrow(/WORKER_CONCURRENCY/);
    expect(loadEnv({ AGENT_POLL_INTERVAL_SECONDS: '60' }).AGENT_POLL_INTERVAL_SECONDS).toBe(60);
  });
});

describe('ROLE_REPOSITORY_URL', () => {
  it.each([
    'https://git.example.org/fleet/roles.git',
    'http://git.internal:8080/roles',
    'ssh://git@git.example.org:2222/fleet/roles.git',
    'git://git.example.org/roles.git',
    'git@github.com:example/fleet-roles.git',
    'deploy@git.example.org:roles',
    'git.example.org:fleet/roles.git',
    'file:///srv/git/roles.git',
  ])('takes %j, as git clone does', (value) => {
    expect(loadEnv({ ROLE_REPOSITORY_URL: value }).ROLE_REPOSITORY_URL).toBe(value);
  });

  it.each([
    'roles',
    '/srv/git/roles.git',
    'ftp://example.org/roles.git',
    'file://host/srv/roles.git',
    'file:///',
    'https://',
    '-uhttps://example.org/x.git',
    '--upload-pack=touch /tmp/x',
    'ext::sh -c touch% /tmp/pwned',
    'ext::touch%x',
    'https://example.org/roles.git\n',
    'git@host:roles repo',
    'host://x',
  ])('refuses %j, naming the variable', (value) => {
    expect(() => loadEnv({ ROLE_REPOSITORY_URL: value })).toThrow(/ROLE_REPOSITORY_URL/);
  });
});

describe('start-up warnings', () => {
  it('names PUBLIC_BASE_URL and ROLE_REPOSITORY_URL while they are left at their defaults', () => {
    const warnings = configWarnings(loadEnv({}));
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toContain('PUBLIC_BASE_URL');
    expect(warnings[1]).toContain('ROLE_REPOSITORY_URL');
  });

  it('says nothing once both are set', () => {
    const env = loadEnv({
      PUBLIC_BASE_URL: 'https://fleet.example.org',
      ROLE_REPOSITORY_URL: 'https://git.example.org/roles.git',
    });
    expect(configWarnings(env)).toEqual([]);
  });
});

describe('the check-in path (replica, heartbeats)', () => {
  it('takes an optional postgres:// DATABASE_REPLICA_URL and REPLICA_MAX_LAG_SECONDS, default 5', () => {
    const plain = loadEnv({});
    expect(plain.DATABASE_REPLICA_URL).toBeUndefined();
    expect(plain.REPLICA_MAX_LAG_SECONDS).toBe(5);
    expect(plain.CHECKIN_MAX_EVENT_LOOP_DELAY_MS).toBe(100);
    const set = loadEnv({
      DATABASE_REPLICA_URL: 'postgres://fleet@replica.internal/fleet',
      REPLICA_MAX_LAG_SECONDS: '2',
    });
    expect(set.DATABASE_REPLICA_URL).toBe('postgres://fleet@replica.internal/fleet');
    expect(set.REPLICA_MAX_LAG_SECONDS).toBe(2);
    expect(() => loadEnv({ DATABASE_REPLICA_URL: 'mysql://replica/fleet' })).toThrow(/DATABASE_REPLICA_URL/);
    expect(() => loadEnv({ REPLICA_MAX_LAG_SECONDS: '0' })).toThrow(/REPLICA_MAX_LAG_SECONDS/);
    expect(() => loadEnv({ CHECKIN_MAX_EVENT_LOOP_DELAY_MS: '1e3' })).toThrow(/CHECKIN_MAX_EVENT_LOOP_DELAY_MS/);
  });
});

describe('DISK_KEY_ENCRYPTION_KEY', () => {
  it('takes base64 of 32 bytes and is optional', () => {
    const key = Buffer.from(new Uint8Array(32).fill(3)).toString('base64');
    expect(loadEnv({ DISK_KEY_ENCRYPTION_KEY: key }).DISK_KEY_ENCRYPTION_KEY).toBe(key);
    expect(loadEnv({}).DISK_KEY_ENCRYPTION_KEY).toBeUndefined();
  });

  it.each([
    Buffer.from(new Uint8Array(16)).toString('base64'),
    Buffer.from(new Uint8Array(33)).toString('base64'),
    'not base64 at all, but 44 characters long!!',
    Buffer.from(new Uint8Array(32)).toString('base64url'),
  ])('refuses %j, naming the variable and not the value', (value) => {
    let error: unknown;
    try {
      loadEnv({ DISK_KEY_ENCRYPTION_KEY: value });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(String(error)).toMatch(/DISK_KEY_ENCRYPTION_KEY/);
    expect(String(error)).not.toContain(value);
  });
});
