import { describe, expect, it } from 'vitest';
import { compareDebianVersions } from '../../api/vulnerabilities/dpkg_version.ts';
import { dpkgOrders, generatedPairs, random, readCorpus, samplePairs } from '../fixtures/dpkg_versions/corpus.ts';
import { missingTools } from '../support/tools.ts';

describe('Debian version comparison', () => {
  const corpus = readCorpus();

  it('agrees with the answers dpkg gave for the stored corpus (generated pairs and every pair of the samples)', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(10_000 + samplePairs().length);
    const wrong = corpus.filter((p) => compareDebianVersions(p.a, p.b) !== p.order);
    expect(wrong.slice(0, 10)).toEqual([]);
    // The corpus exercises every answer, not mostly one.
    for (const order of [-1, 0, 1]) expect(corpus.filter((p) => p.order === order).length).toBeGreaterThan(1000);
  });

  it('holds the rules of deb-version(7) the security data depends on', () => {
    expect(compareDebianVersions('1:0.9-1', '2.0-1')).toBe(1); // the epoch first
    expect(compareDebianVersions('1.2~rc1-1', '1.2-1')).toBe(-1); // ~ before the end
    expect(compareDebianVersions('1.2~~', '1.2~')).toBe(-1);
    expect(compareDebianVersions('7.88.1-10+deb12u15', '7.88.1-10+deb12u16')).toBe(-1); // numbers as numbers
    expect(compareDebianVersions('7.88.1-10+deb12u5', '7.88.1-10+deb12u15')).toBe(-1);
    expect(compareDebianVersions('1.0', '1.0-0')).toBe(0); // a missing revision
    expect(compareDebianVersions('0:1.0', '1.0')).toBe(0);
    expect(compareDebianVersions('1.0a', '1.0+')).toBe(-1); // letters before other characters
    expect(compareDebianVersions('1.01', '1.1')).toBe(0);
    expect(compareDebianVersions('3.0.2-0ubuntu1.14', '3.0.2-0ubuntu1.9')).toBe(1);
  });

  describe.skipIf(missingTools('dpkg'))('against dpkg itself', () => {
    it('agrees with dpkg --compare-versions on a few hundred pairs it has not seen', () => {
      const seed = Math.floor(Math.random() * 2 ** 31);
      const pairs = generatedPairs(200, seed);
      const rnd = random(seed);
      const fromCorpus = Array.from({ length: 100 }, () => corpus[Math.floor(rnd() * corpus.length)]!);
      const all = [...pairs, ...fromCorpus];
      const orders = dpkgOrders(all);
      const wrong = all.filter((p, i) => compareDebianVersions(p.a, p.b) !== orders[i]);
      expect(wrong.slice(0, 10), `seed ${seed}`).toEqual([]);
    });
  });
});
