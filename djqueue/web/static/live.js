// "Live poll" for the list pages of both mounts (Queues, a queue, Scheduled, Retries, Dead,
// Busy, Periodic) and the Metrics page, as the dashboard's figures refresh themselves: while
// the toggle is on, fetch this very page (its query string too: the range, the filter, the
// chosen class) every few seconds and put its #djqueue-refresh in place of ours. The ticked
// rows, the chosen action, "select all", text typed in a box and not yet sent, and the scroll
// position are kept; a refresh waits while a field of the list has the focus (someone is
// typing a search). The choice is remembered in the browser (localStorage), for every page.
(function () {
  "use strict";
  const region = document.getElementById("djqueue-refresh");
  const toggle = document.querySelector(".djqueue-live-toggle");
  if (!region || !toggle) return;
  const updated = document.querySelector('.djqueue-live-poll [data-live="updated"]');
  const KEY = "djqueue-live-poll";
  const seconds = Number(toggle.dataset.seconds || 5);
  let timer = null;

  function live() {
    try { return window.localStorage.getItem(KEY) === "on"; } catch (error) { return false; }
  }

  function show() {
    const on = live();
    toggle.setAttribute("aria-pressed", on ? "true" : "false");
    // The words come from the page, in its language (data-on, data-off...).
    const words = toggle.dataset;
    toggle.textContent = on ? words.on || "Pause" : words.off || "Live poll";
    toggle.title = on
      ? words.onTitle || "Stop refreshing this list"
      : (words.offTitle || "Refresh this list every {seconds} s").replace("{seconds}", seconds);
  }

  // A row is known by its job (a queue's row keys hold the job's index, which a push moves),
  // or its periodic job's name.
  function rowOf(box) {
    const tr = box.closest("tr");
    return (tr && (tr.dataset.jid || tr.dataset.name)) || box.value;
  }

  function kept() {
    const across = region.querySelector("input.select-across");
    const action = region.querySelector("select[name=action]");
    const typed = {};
    region.querySelectorAll("input[type=text][name], input[type=search][name]").forEach(function (box) {
      if (box.value !== box.defaultValue) typed[box.name] = box.value;
    });
    return {
      keys: Array.from(region.querySelectorAll("input.action-select:checked"))
        .map(rowOf),
      across: across ? across.value : "",
      action: action ? action.value : "",
      typed: typed,
    };
  }

  function restore(was) {
    region.querySelectorAll("input.action-select").forEach(function (box) {
      box.checked = was.keys.indexOf(rowOf(box)) >= 0;
    });
    const across = region.querySelector("input.select-across");
    if (across && was.across) across.value = was.across;
    const action = region.querySelector("select[name=action]");
    if (action && was.action) action.value = was.action;
    Object.keys(was.typed).forEach(function (name) {
      const box = region.querySelector('input[name="' + name + '"]');
      if (box) box.value = was.typed[name];
    });
    document.dispatchEvent(new CustomEvent("djqueue:refreshed"));
  }

  async function refresh() {
    timer = null;
    if (!live()) return;
    if (region.contains(document.activeElement) && document.activeElement.matches("input, select, textarea")) {
      timer = setTimeout(refresh, seconds * 1000);
      return;
    }
    try {
      const response = await fetch(window.location.href, { credentials: "same-origin" });
      if (!response.ok) throw new Error("HTTP " + response.status);
      const found = new DOMParser().parseFromString(await response.text(), "text/html");
      const fresh = found.getElementById("djqueue-refresh");
      if (!fresh) throw new Error("the page has no list");
      const was = kept();
      const x = window.scrollX, y = window.scrollY;
      region.replaceChildren.apply(region, Array.from(fresh.childNodes).map(function (node) {
        return document.importNode(node, true);
      }));
      restore(was);
      window.scrollTo(x, y);
      updated.textContent = (updated.dataset.updated || "updated {time}").replace("{time}", new Date().toLocaleTimeString());
      region.classList.remove("djqueue-stale");
    } catch (error) {
      updated.textContent = (updated.dataset.failed || "could not refresh: {error}").replace("{error}", error.message);
      region.classList.add("djqueue-stale");
    }
    if (live()) timer = setTimeout(refresh, seconds * 1000);
  }

  toggle.addEventListener("click", function () {
    try { window.localStorage.setItem(KEY, live() ? "off" : "on"); } catch (error) { return; }
    show();
    if (timer) clearTimeout(timer);
    timer = null;
    if (live()) refresh();
    else updated.textContent = "";
  });
  show();
  if (live()) timer = setTimeout(refresh, seconds * 1000);
})();
