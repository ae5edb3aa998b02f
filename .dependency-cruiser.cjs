/**
 * The layers of the code, held by dependency-cruiser (`npm run lint:layers`, run by .ci/run).
 * From the ground up:
 *   api/http/, api/log.ts         the cross-cutting HTTP pieces; import nothing of ours
 *   api/db/, api/config.ts        the database client and the environment
 *   api/access/                   who may call what, the Hono env type, the audit insert, the key lookup
 *   the feature folders           organizations, devices, catalog, agent, ... (the table below)
 *   api/portal/, api/docs/, api/metrics/, jobs/   what is built on the features
 *   api/app.ts, api/runtime/      the app and the processes that serve it
 *   api/main_*.ts                 the entry points
 * An arrow may only point down. Type-only imports count: a type is a dependency too.
 */
const { readdirSync } = require('node:fs');
const { join } = require('node:path');

/**
 * Which feature folders each feature folder may import (besides access/, db/, http/ and the
 * files beside them). The table must stay free of circles, so no two features ever import
 * each other; it is checked below, when this file is loaded.
 */
const featureMayImport = {
  organizations: [],
  templates: [],
  reference_data: [],
  health: [],
  api_keys: ['organizations'],
  audit: ['organizations'],
  webhooks: ['organizations'],
  iso_builds: ['organizations'],
  org_units: ['organizations'],
  enrollment_sessions: ['organizations', 'templates'],
  vulnerabilities: [],
  devices: ['organizations', 'org_units', 'vulnerabilities'],
  groups: ['organizations', 'devices'],
  catalog: ['devices', 'org_units'],
  inventory: ['organizations', 'devices', 'agent', 'disk_keys', 'vulnerabilities'],
  disk_keys: ['devices'],
  actions: ['organizations', 'devices'],
  activation: ['organizations', 'templates', 'devices', 'disk_keys'],
  agent: ['activation', 'catalog', 'devices', 'rollouts', 'disk_keys', 'actions'],
  rollouts: ['organizations', 'org_units', 'devices', 'groups', 'catalog', 'actions'],
  device_bulk: ['organizations', 'org_units', 'devices', 'groups', 'catalog'],
};
/** The folders of api/ that are not features: the floors below and above them. */
const layerFolders = ['http', 'db', 'access', 'portal', 'docs', 'metrics', 'runtime'];

function assertNoCircle(table) {
  const state = new Map();
  const visit = (name, trail) => {
    if (state.get(name) === 'done') return;
    if (state.get(name) === 'open') throw new Error(`featureMayImport has a circle: ${[...trail, name].join(' → ')}`);
    state.set(name, 'open');
    for (const next of table[name] ?? []) visit(next, [...trail, name]);
    state.set(name, 'done');
  };
  for (const name of Object.keys(table)) visit(name, []);
}

function assertEveryFolderPlaced() {
  const folders = readdirSync(join(__dirname, 'api'), { withFileTypes: true }).filter((e) => e.isDirectory());
  const unplaced = folders.map((e) => e.name).filter((n) => !(n in featureMayImport) && !layerFolders.includes(n));
  if (unplaced.length > 0) {
    throw new Error(
      `api/${unplaced.join(', api/')}: place it in featureMayImport or layerFolders (.dependency-cruiser.cjs)`,
    );
  }
}

assertNoCircle(featureMayImport);
assertEveryFolderPlaced();

const featureNames = Object.keys(featureMayImport);
const features = `^api/(${featureNames.join('|')})/`;
const above = '^api/(portal|docs|metrics|runtime)/|^api/(app|main_[a-z]+)[.]ts$|^jobs/';

const featureRules = featureNames.map((name) => ({
  name: `feature-${name}`,
  comment: `api/${name}/ may import only these features: ${featureMayImport[name].join(', ') || 'none'}.`,
  severity: 'error',
  from: { path: `^api/${name}/` },
  to: { path: features, pathNot: `^api/(${[name, ...featureMayImport[name]].join('|')})/` },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'Files that import each other, type-only included: one of them knows too much.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'http-is-the-ground',
      comment: 'api/http/ and api/log.ts are used by everything, so they import nothing of ours.',
      severity: 'error',
      from: { path: '^api/http/|^api/log[.]ts$' },
      to: { path: '^(api|jobs)/', pathNot: '^api/http/|^api/log[.]ts$' },
    },
    {
      name: 'db-knows-no-feature',
      comment: 'The database client and the configuration stand below access and the features.',
      severity: 'error',
      from: { path: '^api/db/|^api/config[.]ts$' },
      to: { path: '^(api|jobs)/', pathNot: '^api/(http|db)/|^api/(log|config)[.]ts$' },
    },
    {
      name: 'access-knows-no-feature',
      comment: 'Access rules are declared by the features; access/ itself names none of them.',
      severity: 'error',
      from: { path: '^api/access/' },
      to: { path: `${features}|${above}` },
    },
    ...featureRules,
    {
      name: 'features-stand-below-the-app',
      comment: 'A feature is used by the portal, the docs, the app and the jobs, never the other way.',
      severity: 'error',
      from: { path: features },
      to: { path: above },
    },
    {
      name: 'pages-stand-below-the-app',
      comment: 'The portal, docs and metrics are mounted by the app; they do not reach up into it.',
      severity: 'error',
      from: { path: '^api/(portal|docs|metrics)/' },
      to: { path: '^api/runtime/|^api/(app|main_[a-z]+)[.]ts$|^jobs/' },
    },
    {
      name: 'jobs-stand-below-the-processes',
      comment: 'Tasks run under the runtime; they use features, never the app or the portal.',
      severity: 'error',
      from: { path: '^jobs/' },
      to: { path: '^api/(portal|docs|metrics|runtime)/|^api/(app|main_[a-z]+)[.]ts$' },
    },
    {
      name: 'only-entry-points-start-processes',
      comment: 'api/runtime/ is what an entry point starts; only api/main_*.ts import it.',
      severity: 'error',
      from: { pathNot: '^api/runtime/|^api/main_[a-z]+[.]ts$|^test/' },
      to: { path: '^api/runtime/' },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|test)/' },
  },
};
