// The dashboard's live view: every few seconds, fetch the figures as JSON and put them in
// place, so the page stays current without reloading. Everything it needs is in data
// attributes on the page, so the Django admin and the Flask dashboard share this file.
(function () {
  "use strict";
  const root = document.querySelector("[data-live-url]");
  if (!root) return;
  const seconds = Number(root.dataset.poll);
  if (!seconds) return;
  const updated = root.querySelector('[data-live="updated"]');

  function put(element, text) {
    if (!element || element.textContent === text) return;
    element.textContent = text;
    element.classList.add("changed");
    setTimeout(function () { element.classList.remove("changed"); }, 800);
  }

  async function refresh() {
    try {
      const response = await fetch(root.dataset.liveUrl, {
        credentials: "same-origin",
        headers: { Accept: "application/json" },
      });
      const data = await response.json();
      if (!response.ok) throw new Error(data.error || "HTTP " + response.status);
      for (const [name, text] of Object.entries(data.figures)) {
        put(root.querySelector('[data-figure="' + name + '"]'), text);
      }
      put(root.querySelector('[data-live="latency"]'), data.latency);
      const paused = root.querySelector('[data-live="paused"]');
      if (paused) {
        put(paused, data.paused || "");
        paused.parentElement.hidden = !data.paused;
      }
      const chart = root.querySelector('[data-live="chart"]');
      if (chart && chart.innerHTML !== data.chart) chart.innerHTML = data.chart;
      root.querySelectorAll("[data-redis]").forEach(function (cell) {
        const value = data.redis[cell.dataset.redis];
        if (value !== undefined) cell.textContent = value;
      });
      updated.textContent = (updated.dataset.updated || "updated {time}").replace("{time}", new Date().toLocaleTimeString());
      root.classList.remove("djqueue-stale");
    } catch (error) {
      updated.textContent = (updated.dataset.failed || "could not refresh: {error}").replace("{error}", error.message);
      root.classList.add("djqueue-stale");
    }
    setTimeout(refresh, seconds * 1000);
  }

  setTimeout(refresh, seconds * 1000);
})();
