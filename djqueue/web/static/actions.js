// Row selection on the list pages of both mounts: a checkbox toggling the page, a running
// count, and "Select all N jobs", which sets select_across so the action applies to every
// job of the list (the server asks first). Listens on the document, so the rows a live
// refresh puts in place (live.js) work the same; live.js says so with "djqueue:refreshed".
(function () {
  "use strict";

  function parts() {
    const form = document.getElementById("changelist-form");
    if (!form || !form.querySelector(".actions")) return null;  // nothing to select
    return {
      boxes: Array.from(form.querySelectorAll("input.action-select")),
      toggle: document.getElementById("action-toggle"),
      counter: form.querySelector(".action-counter"),
      across: form.querySelector("input.select-across"),
      selectAll: form.querySelector(".djqueue-select-all"),
    };
  }

  function update() {
    const p = parts();
    if (!p) return;
    const checked = p.boxes.filter(function (box) { return box.checked; }).length;
    const all = checked === p.boxes.length && p.boxes.length > 0;
    if (p.toggle) p.toggle.checked = all;
    if (p.across.value === "1" && !all) p.across.value = "0";
    if (p.selectAll) p.selectAll.hidden = !all || p.across.value === "1";
    // The words come from the page, in its language (data-all, data-some).
    p.counter.textContent = p.across.value === "1" && p.selectAll
      ? (p.counter.dataset.all || "All {total} selected").replace("{total}", p.selectAll.dataset.total)
      : (p.counter.dataset.some || "{checked} of {total} selected")
        .replace("{checked}", checked).replace("{total}", p.boxes.length);
    p.boxes.forEach(function (box) { box.closest("tr").classList.toggle("selected", box.checked); });
  }

  document.addEventListener("change", function (event) {
    const p = parts();
    if (!p) return;
    if (p.toggle && event.target === p.toggle) {
      p.boxes.forEach(function (box) { box.checked = p.toggle.checked; });
    } else if (!event.target.matches("input.action-select")) {
      return;
    }
    update();
  });
  document.addEventListener("click", function (event) {
    const link = event.target.closest(".djqueue-select-all");
    const p = parts();
    if (!link || !p) return;
    event.preventDefault();
    p.across.value = "1";
    update();
  });
  document.addEventListener("djqueue:refreshed", update);
  update();
})();
