/** The environment schema (api/config.ts): defaults, and a bad value named at start-up. */
import { cpus } from 'node:os';
import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_POOL_SIZE, loadEnv } from '../api/config.ts';

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
