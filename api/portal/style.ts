/** The portal's one style sheet, served at /portal/style.css (no build step, no other host). */
export const portalCss = `
:root { --ink: #1a1a1a; --muted: #555; --line: #c8c8c8; --accent: #0b4f8a; --bad: #9b1c1c; --ok: #1d6b2f; --bg: #fff; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, sans-serif; color: var(--ink); background: var(--bg); }
header { background: var(--accent); color: #fff; padding: .5rem 1rem; display: flex; flex-wrap: wrap; gap: 1rem; align-items: center; }
header a { color: #fff; }
header nav { display: flex; flex-wrap: wrap; gap: .75rem; }
header form { margin-left: auto; }
header .languages { gap: .5rem; }
header > strong + .languages { margin-left: auto; }
main { padding: 1rem; max-width: 80rem; }
/* A long German word of a title ("Organisationseinheit") fits a phone's width whole. */
@media (max-width: 30rem) { h1 { font-size: 1.5rem; } }
a { color: var(--accent); }
a:focus, button:focus, input:focus, select:focus, summary:focus { outline: 3px solid #f2a900; outline-offset: 2px; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; }
th, td { border-bottom: 1px solid var(--line); padding: .35rem .5rem; text-align: left; vertical-align: top; }
th { background: #eef2f6; }
button { font: inherit; padding: .3rem .8rem; border: 1px solid var(--accent); background: var(--accent); color: #fff; border-radius: 3px; cursor: pointer; }
button.secondary { background: #fff; color: var(--accent); }
button.danger { background: var(--bad); border-color: var(--bad); }
form.inline { display: inline; }
label { display: block; margin: .4rem 0 .1rem; font-weight: 600; }
input, select { font: inherit; padding: .25rem .4rem; border: 1px solid #767676; border-radius: 3px; }
.filters { display: flex; flex-wrap: wrap; gap: 1rem; align-items: end; }
.flash { padding: .5rem 1rem; border-left: 4px solid var(--ok); background: #eaf5ec; }
.flash.error { border-color: var(--bad); background: #fbeaea; }
.stale { color: var(--bad); font-weight: 600; }
.muted { color: var(--muted); }
.empty { padding: 1rem; background: #f4f6f8; border: 1px dashed var(--line); }
progress { width: 12rem; height: 1.2rem; }
ol.steps { margin: .25rem 0; padding-left: 1.5rem; }
.decisive { font-weight: 700; }
.indent { display: inline-block; width: 1.5rem; }
.badge { display: inline-block; padding: 0 .45rem; border: 1px solid var(--line); border-radius: .7rem; font-size: .875rem; white-space: nowrap; }
.badge.converged, .badge.status-active { border-color: var(--ok); color: var(--ok); background: #eaf5ec; }
.badge.pending, .badge.status-enrolled { border-color: #8a6d00; color: #6b5500; background: #fdf6dc; }
.badge.failed, .badge.status-stale { border-color: var(--bad); color: var(--bad); background: #fbeaea; font-weight: 600; }
.badge.status-deprovisioned, .badge.status-archived { color: var(--muted); background: #f4f6f8; }
.badge.urgency-critical, .badge.urgency-high { border-color: var(--bad); color: var(--bad); background: #fbeaea; font-weight: 600; }
.badge.urgency-medium { border-color: #8a6d00; color: #6b5500; background: #fdf6dc; }
.badge.urgency-low, .badge.urgency-unknown, .badge.urgency-unimportant { color: var(--muted); background: #f4f6f8; }
.report-message { display: block; font-size: .875rem; overflow-wrap: anywhere; }
.figures { display: flex; flex-wrap: wrap; gap: 1rem; list-style: none; padding: 0; margin: .5rem 0 1rem; }
.figures li { min-width: 9rem; padding: .5rem .75rem; border: 1px solid var(--line); border-radius: 3px; }
.figures .figure { display: block; font-size: 1.75rem; font-weight: 700; }
svg.bar { width: 16rem; height: 1.2rem; border: 1px solid var(--line); background: #e6e9ec; vertical-align: middle; }
svg.bar .converged { fill: var(--ok); }
svg.bar .pending { fill: #d9b300; }
svg.bar .failed { fill: var(--bad); }
.choices { display: flex; flex-wrap: wrap; gap: 2rem; }
.choices section { flex: 1 1 20rem; padding: .5rem 1rem; border: 1px solid var(--line); border-radius: 3px; }
td.number, th.number { text-align: right; font-variant-numeric: tabular-nums; }
/* Names wrap between their words; a word is split only when it alone is wider than its box. */
body { overflow-wrap: break-word; }
select { max-width: 100%; }
.filters > div { min-width: 0; max-width: 100%; }
/* A table wider than the screen scrolls in its own box; the page never scrolls sideways. */
.table-wrap { max-width: 100%; overflow-x: auto; }
/* A row's value (a serial, a hostname, a unit) has its column's whole width: a word wider than that is split, not scrolled. */
th[scope=row] + td { overflow-wrap: anywhere; }
table.devices { min-width: 60rem; }
table.devices time { white-space: nowrap; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
nav.paging { display: flex; flex-wrap: wrap; gap: 1rem; margin: .5rem 0 1rem; }
fieldset.bulk { border: 1px solid var(--line); border-radius: 3px; margin: 1rem 0; min-width: 0; }
table.hardware th { width: 16rem; background: #f4f6f8; }
ul.plain { margin: 0; padding-left: 1.1rem; }
.warning { padding: .5rem 1rem; border-left: 4px solid var(--bad); background: #fbeaea; color: var(--bad); font-weight: 600; }
.mono { font-family: ui-monospace, monospace; font-size: .875rem; overflow-wrap: anywhere; }
.pager { display: flex; gap: 1rem; flex-wrap: wrap; }
textarea { font: .875rem/1.4 ui-monospace, monospace; width: 100%; max-width: 100%; padding: .25rem .4rem; border: 1px solid #767676; border-radius: 3px; }
label.check { font-weight: 400; }
/* A script or an output keeps its lines; one wider than the box wraps (the page never scrolls sideways). */
pre.output { font: .875rem/1.4 ui-monospace, monospace; white-space: pre-wrap; overflow-wrap: anywhere; max-height: 32rem; overflow-y: auto; margin: .25rem 0 .5rem; padding: .5rem; background: #f4f6f8; border: 1px solid var(--line); }
h2.webhook-url { font-size: 1.1rem; overflow-wrap: anywhere; border-top: 1px solid var(--line); padding-top: .75rem; }
`;
