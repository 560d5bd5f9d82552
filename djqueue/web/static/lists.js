// The list pages' filters, folded at a phone's width: "By job" and "By queue" each open with
// one tap, instead of pushing the jobs a screen further down. Wider, they stay open.
(function () {
  "use strict";
  if (!window.matchMedia("(max-width: 767px)").matches) return;
  document.querySelectorAll("#changelist-filter details[open]").forEach(function (details) {
    details.open = false;
  });
})();
