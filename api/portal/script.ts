/**
 * The portal's one script, served at /portal/rollouts.js (from this site, so the policy
 * needs no inline script and no other host): it refreshes the live part of a rollout's
 * page (`[data-refresh]`: status, rings, actions) from the page itself every few seconds,
 * until the rollout has ended. Without script the page's refresh link does the same.
 */
export const rolloutRefreshJs = `'use strict';
(function () {
  function current() { return document.querySelector('[data-refresh][id]'); }
  function schedule() {
    var live = current();
    if (!live) return;
    var seconds = Number(live.getAttribute('data-refresh')) || 5;
    setTimeout(refresh, seconds * 1000);
  }
  function refresh() {
    var live = current();
    if (!live) return;
    fetch(location.href, { credentials: 'same-origin', cache: 'no-store', redirect: 'manual' })
      .then(function (res) {
        // A redirect (the session ended) or an error page: the page stays as it is.
        if (res.status !== 200) return null;
        return res.text();
      })
      .then(function (html) {
        if (html === null) return;
        var fresh = new DOMParser().parseFromString(html, 'text/html').getElementById(live.id);
        if (!fresh) return;
        live.replaceWith(document.importNode(fresh, true));
        schedule();
      })
      .catch(function () { setTimeout(refresh, 15000); });
  }
  schedule();
})();
`;
