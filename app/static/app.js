// The demo page: wait for the service, list its models, and send the pad to every model while
// the user draws (debounced, stale requests aborted so answers never arrive out of order).

import { api, ApiError, isAbort, isNetworkError } from "./api.js";
import { AttentionView } from "./attention.js";
import { clearCanvas, drawInput } from "./heatmap.js";
import { loadImageFile, Pad } from "./pad.js";
import { ModelPanel } from "./panels.js";

const DEBOUNCE_MS = 200; // after the last pointer move; a finished stroke is sent at once
const READY_POLL_MS = 1000;
const ARCH_ORDER = { vit: 0, cnn: 1 };

const $ = (id) => document.getElementById(id);
const app = $("app");
const statusEl = $("status");
const banner = $("banner");
const preview = $("input-preview");
const prompt = $("pad-prompt");
const padWrap = $("pad-wrap");

const pad = new Pad($("pad"));
const attention = new AttentionView();
const panels = new Map();

const state = {
  ready: false,
  connecting: null, // promise of the running connect loop
  device: null,
  generation: 0,
  controller: null,
  timer: 0,
  inflight: 0,
  pending: false, // the pad changed while the service was not ready
};

// ---------------------------------------------------------------- status and banner

function setStatus(kind, text) {
  statusEl.dataset.state = kind;
  statusEl.querySelector(".status-text").textContent = text;
}

function showBanner(kind, text) {
  banner.dataset.kind = kind;
  banner.textContent = text;
  banner.hidden = false;
}

function hideBanner() {
  banner.hidden = true;
  banner.textContent = "";
}

function updateBusy() {
  app.dataset.busy = String(state.timer !== 0 || state.inflight > 0 || !state.ready);
  app.dataset.generation = String(state.generation);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------- connecting

/** Poll /v2/health/ready until the service answers ready, then load /health and /v1/models. */
function connect() {
  if (!state.connecting) {
    state.ready = false;
    updateBusy();
    state.connecting = connectLoop().finally(() => {
      state.connecting = null;
    });
  }
  return state.connecting;
}

async function connectLoop() {
  setStatus("connecting", "Connecting…");
  let waited = false;
  for (;;) {
    try {
      const { data } = await api.ready();
      if (data && data.ready) break;
      showBanner("warn", "The service is starting: models are loading. This page updates by itself.");
      setStatus("starting", "Starting…");
    } catch (err) {
      if (err instanceof ApiError) {
        showBanner("warn", "The service is not ready yet (models are loading or it is shutting down). Retrying…");
        setStatus("starting", "Not ready");
      } else {
        showBanner("error", "Cannot reach the service. Check that it is running; retrying every second…");
        setStatus("offline", "Offline");
      }
    }
    waited = true;
    await sleep(READY_POLL_MS);
  }
  try {
    const [{ data: health }, { data: models }] = await Promise.all([api.health(), api.models()]);
    state.device = health && health.device;
    buildPanels(models.models || []);
  } catch (err) {
    showBanner("error", `The service is up but listing its models failed: ${err.message}`);
    setStatus("offline", "Error");
    state.pending = true;
    await sleep(READY_POLL_MS);
    return connectLoop();
  }
  hideBanner();
  setStatus("ready", `Ready${state.device ? ` · ${state.device}` : ""}`);
  state.ready = true;
  updateBusy();
  // Send the pad again if it changed while we waited or the service was away; not after a quick
  // check that found it healthy (that would retry a failing request in a tight loop).
  if ((state.pending || waited) && !pad.isEmpty()) predictNow();
  state.pending = false;
}

function buildPanels(models) {
  const sorted = [...models].sort(
    (a, b) => (ARCH_ORDER[a.arch] ?? 9) - (ARCH_ORDER[b.arch] ?? 9) || a.name.localeCompare(b.name),
  );
  const names = sorted.map((m) => m.name).join(",");
  if (names === [...panels.keys()].join(",")) return; // same models: keep the panels
  panels.clear();
  const container = $("models");
  const template = $("model-template");
  container.replaceChildren();
  for (const info of sorted) {
    const panel = new ModelPanel({ device: state.device, ...info }, template);
    panels.set(info.name, panel);
    container.append(panel.el);
  }
  container.dataset.count = String(sorted.length);
  if (sorted.length === 0) {
    const none = document.createElement("p");
    none.className = "card empty-models";
    none.textContent = "The service has no models loaded. Train one with `make train`.";
    container.append(none);
  }
  attention.setModels(sorted.filter((m) => m.supports_attention));
  attention.clear();
}

// ---------------------------------------------------------------- predictions

function schedule(final) {
  clearTimeout(state.timer);
  state.timer = 0;
  if (final) {
    predictNow();
  } else {
    state.timer = setTimeout(() => {
      state.timer = 0;
      predictNow();
    }, DEBOUNCE_MS);
  }
  updateBusy();
}

function resetResults() {
  clearTimeout(state.timer);
  state.timer = 0;
  if (state.controller) state.controller.abort();
  state.controller = null;
  state.generation++;
  for (const panel of panels.values()) panel.setEmpty();
  attention.clear();
  clearCanvas(preview);
  preview.dataset.state = "empty";
  $("announcer").textContent = "";
  updateBusy();
}

function predictNow() {
  if (pad.isEmpty()) return resetResults();
  if (!state.ready) {
    state.pending = true;
    return connect();
  }
  if (state.controller) state.controller.abort(); // stale answers are never shown
  const controller = new AbortController();
  state.controller = controller;
  const gen = ++state.generation;
  const image = pad.toDataURL(280);
  const current = () => gen === state.generation;
  let inputShown = false;
  const showInput = (input) => {
    if (!inputShown && input && current()) {
      inputShown = true;
      drawInput(preview, input);
      preview.dataset.state = "done";
    }
  };

  const jobs = [];
  for (const panel of panels.values()) {
    panel.setLoading(gen);
    jobs.push(
      track(api.predict(panel.name, image, controller.signal))
        .then(({ data, rtt }) => {
          if (!current()) return null;
          panel.setResult(data, rtt, gen);
          showInput(data.input);
          return data;
        })
        .catch((err) => {
          if (!isAbort(err) && current()) panel.setError(describe(err), gen);
          return null;
        }),
    );
  }
  const attnModel = attention.selectedModel;
  if (attnModel) {
    jobs.push(
      track(api.attention(attnModel, image, controller.signal))
        .then(({ data }) => {
          if (!current()) return;
          showInput(data.input);
          attention.setData(data);
        })
        .catch((err) => {
          if (!isAbort(err) && current()) attention.clear(describe(err));
        }),
    );
  }
  Promise.all(jobs).then((results) => {
    if (!current()) return;
    const said = [...panels.values()].map((p, i) =>
      results[i] ? `${p.name} reads ${results[i].label}, ${Math.round(results[i].confidence * 100)} percent` : null,
    );
    $("announcer").textContent = said.filter(Boolean).join(". ");
  });
  updateBusy();
}

/** Count in-flight requests for data-busy (tests and the loading style wait on it). */
function track(promise) {
  state.inflight++;
  updateBusy();
  return promise.finally(() => {
    state.inflight--;
    updateBusy();
  });
}

function describe(err) {
  if (err instanceof ApiError) {
    if (err.status === 503) connect(); // not ready / draining: show the banner and wait
    return `Server error ${err.status}: ${err.message}`;
  }
  if (isNetworkError(err)) {
    connect();
    return "Network error: the service could not be reached.";
  }
  return `Unexpected error: ${err.message || err}`;
}

// ---------------------------------------------------------------- pad, upload, keyboard

pad.addEventListener("change", (e) => {
  const empty = pad.isEmpty();
  prompt.hidden = !empty;
  $("undo").disabled = empty;
  padWrap.dataset.strokes = String(pad.strokeCount());
  $("pad-message").textContent = "";
  if (empty) resetResults();
  else schedule(e.detail.final);
});

$("clear").addEventListener("click", () => {
  pad.clear();
  resetResults();
});
$("undo").addEventListener("click", () => pad.undo());

async function useFile(file) {
  if (!file) return;
  try {
    const { source, background } = await loadImageFile(file);
    pad.setImage(source, background);
  } catch (err) {
    $("pad-message").textContent = err.message;
  }
}

$("upload").addEventListener("change", async (e) => {
  await useFile(e.target.files && e.target.files[0]);
  e.target.value = ""; // choosing the same file again still fires change
});

for (const type of ["dragenter", "dragover"]) {
  padWrap.addEventListener(type, (e) => {
    e.preventDefault();
    padWrap.classList.add("is-dragging");
  });
}
for (const type of ["dragleave", "drop"]) {
  padWrap.addEventListener(type, () => padWrap.classList.remove("is-dragging"));
}
padWrap.addEventListener("drop", (e) => {
  e.preventDefault();
  useFile(e.dataTransfer && e.dataTransfer.files[0]);
});
window.addEventListener("paste", (e) => {
  const item = [...(e.clipboardData?.items || [])].find((it) => it.type.startsWith("image/"));
  if (item) useFile(item.getAsFile());
});

document.addEventListener("keydown", (e) => {
  const tag = e.target && e.target.tagName;
  if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA") return;
  if (e.key === "Escape" || e.key === "Delete") {
    e.preventDefault();
    pad.clear();
    resetResults();
  } else if ((e.ctrlKey || e.metaKey) && !e.shiftKey && e.key.toLowerCase() === "z") {
    e.preventDefault();
    pad.undo();
  }
});

attention.onModelChange = () => predictNow();

resetResults();
connect();
