// The list pages' filters, folded at a phone's width: "By job" and "By queue" each open with
// one tap, instead of pushing the jobs a screen further down. Wider, they stay open.
// The live poll (live.js) puts a fresh list, filters included, in place of the old one and
// then says "djqueue:refreshed": the fresh filters are folded or opened as the reader left
// them (a filter opened by a tap stays open), not as the server drew them.
(function () {
  "use strict";
  const narrow = window.matchMedia("(max-width: 767px)");
  // Whether the reader has each filter open, by its summary text; folded until tapped.
  const opened = {};

  function name(details) {
    const summary = details.querySelector("summary");
    return summary ? summary.textContent.trim() : "";
  }

  function fold() {
    if (!narrow.matches) return;
    document.querySelectorAll("#changelist-filter details").forEach(function (details) {
      details.open = opened[name(details)] === true;
    });
  }

  // The "toggle" event does not bubble: listen in the capture phase, for fresh filters too.
  document.addEventListener("toggle", function (event) {
    const details = event.target;
    if (narrow.matches && details.closest && details.closest("#changelist-filter")) {
      opened[name(details)] = details.open;
    }
  }, true);
  document.addEventListener("djqueue:refreshed", fold);
  fold();
})();
