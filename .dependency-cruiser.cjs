/**
 * The layers of the code, held by dependency-cruiser (`npm run lint:layers`, run by .ci/run).
 * From the ground up:
 *   api/http/, api/log.ts         the cross-cutting HTTP pieces; import nothing of ours
 *   api/db/, api/config.ts        the database client and the environment
 *   api/app_env.ts, api/access/   who may call what; the audit insert and the key lookup
 *   the feature folders           organizations, devices, catalog, agent, ... (a DAG)
 *   api/portal/, api/docs/, api/metrics/, jobs/   what is built on the features
 *   api/app.ts, api/runtime/      the app and the processes that serve it
 *   api/main_*.ts                 the entry points
 * An arrow may only point down. Type-only imports count: a type is a dependency too.
 */
const features =
  '^api/(organizations|templates|reference_data|health|audit|api_keys|activation|enrollment_sessions|devices|org_units|groups|catalog|iso_builds|webhooks|agent)/';
const above = '^api/(portal|docs|metrics|runtime)/|^api/(app|main_[a-z]+)[.]ts$|^jobs/';

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
      name: 'no-circular-folders',
      comment: 'Two folders that import each other are one folder, or a third one is missing.',
      severity: 'error',
      scope: 'folder',
      from: { path: '^(api|jobs)/[^/]+' },
      to: { circular: true, viaOnly: { path: '^(api|jobs)/[^/]+' } },
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
      from: { path: '^api/access/|^api/app_env[.]ts$' },
      to: { path: `${features}|${above}` },
    },
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
