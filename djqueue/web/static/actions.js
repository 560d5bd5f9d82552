// Row selection for the list pages outside Django's admin (which has its own actions.js):
// a checkbox toggling the page, a running count, and "Select all N jobs", which sets
// select_across so the action applies to every job of the list (the server asks first).
(function () {
  "use strict";
  const form = document.getElementById("changelist-form");
  if (!form || !form.querySelector(".actions")) return;  // an empty list: nothing to select
  const boxes = Array.from(form.querySelectorAll("input.action-select"));
  const toggle = document.getElementById("action-toggle");
  const counter = form.querySelector(".action-counter");
  const across = form.querySelector("input.select-across");
  const selectAll = form.querySelector(".djqueue-select-all");

  function update() {
    const checked = boxes.filter(function (box) { return box.checked; }).length;
    const all = checked === boxes.length && boxes.length > 0;
    if (toggle) toggle.checked = all;
    if (selectAll) selectAll.hidden = !all || across.value === "1";
    if (across.value === "1" && !all) across.value = "0";
    counter.textContent = across.value === "1"
      ? "All " + selectAll.dataset.total + " selected"
      : checked + " of " + boxes.length + " selected";
    boxes.forEach(function (box) { box.closest("tr").classList.toggle("selected", box.checked); });
  }

  if (toggle) {
    toggle.addEventListener("change", function () {
      boxes.forEach(function (box) { box.checked = toggle.checked; });
      update();
    });
  }
  boxes.forEach(function (box) { box.addEventListener("change", update); });
  if (selectAll) {
    selectAll.addEventListener("click", function (event) {
      event.preventDefault();
      across.value = "1";
      selectAll.hidden = true;
      update();
    });
  }
  update();
})();
