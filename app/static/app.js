// The demo page: wait for the service, list its models, and send the pad to every model while
// the user draws (debounced, stale requests aborted so answers never arrive out of order).

import { api, ApiError, isAbort, isNetworkError } from "./api.js";
import { AttentionView } from "./attention.js";
import { clearCanvas, drawInput } from "./heatmap.js";
import { loadImageFile, Pad, UndecodableImage } from "./pad.js";
import { ModelPanel } from "./panels.js";
import { layoutPicks, ROW_HEIGHT } from "./picks.js";

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
  mode: "digit", // "digit": one digit on a square pad; "number": a wide pad read by /read
  reads: new Map(), // model name -> its last /read answer {data, rtt}
  selected: 0, // the digit whose probabilities and attention are shown
  file: null, // {name, image}: a picture this browser cannot show, sent to the models as it is
  overhang: 0, // how far the pad's ink reaches past the picture sent's (pad heights): Pad.upload
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
  // Mid-stroke counts as busy: an answer to part of a stroke is not the answer to the drawing.
  const waiting = state.timer !== 0 || state.inflight > 0 || !state.ready || pad.isDrawing();
  app.dataset.busy = String(waiting);
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
  for (const panel of panels.values()) panel.setEmpty(state.mode === "number" ? "Write a number" : "Draw a digit");
  attention.clear();
  showBoxes([]);
  state.reads = new Map();
  clearCanvas(preview);
  preview.dataset.state = "empty";
  $("announcer").textContent = "";
  updateBusy();
}

function predictNow() {
  if (pad.isEmpty() && !state.file) return resetResults();
  if (!state.ready) {
    state.pending = true;
    return connect();
  }
  if (state.controller) state.controller.abort(); // stale answers are never shown
  const controller = new AbortController();
  state.controller = controller;
  const gen = ++state.generation;
  const sent = state.file ? { image: state.file.image, overhang: 0 } : pad.upload(280);
  state.overhang = sent.overhang; // of the picture sent, for its digits' boxes
  const current = () => gen === state.generation;
  // A drawing goes as its strokes (the same picture on the server): digits written into one another are
  // parted along them, for /read and for the hint that names a number drawn on the one-digit pad.
  const body = sent.strokes || { image: sent.image };
  const jobs = state.mode === "number" ? readJobs(body, gen, current, controller) : digitJobs(body, gen, current, controller);
  Promise.all(jobs).then((results) => {
    if (!current()) return;
    const said = [...panels.values()].map((p, i) => {
      const r = results[i];
      if (!r) return null;
      const sure = Number.isFinite(r.confidence) ? `, ${Math.round(r.confidence * 100)} percent` : "";
      return `${p.name} reads ${r.text !== undefined ? r.text : r.label}${sure}`;
    });
    $("announcer").textContent = said.filter(Boolean).join(". ");
  });
  updateBusy();
}

/** One digit: /predict per model, except the attention model, whose /attention answer already
 * holds its prediction (one forward pass per stroke instead of two). */
function digitJobs(body, gen, current, controller) {
  let inputShown = false;
  const showInput = (input) => {
    if (!inputShown && input && current()) {
      inputShown = true;
      drawInput(preview, input);
      preview.dataset.state = "done";
    }
  };
  const attnModel = attention.selectedModel;
  return [...panels.values()].map((panel) => {
    panel.setLoading(gen);
    const withAttention = panel.name === attnModel;
    const call = withAttention ? api.attention : api.predict;
    return track(call(panel.name, body, controller.signal))
      .then(({ data, rtt }) => {
        if (!current()) return null;
        panel.setResult(data, rtt, gen);
        showInput(data.input);
        if (withAttention) attention.setData(data);
        return data;
      })
      .catch((err) => {
        if (!isAbort(err) && current()) {
          panel.setError(describe(err), gen);
          if (withAttention) attention.clear(describe(err));
        }
        return null;
      });
  });
}

/** A whole number: /read per model; the boxes from the first panel whose answer found digits, and
 * the chosen digit's attention from its 28x28 input. */
function readJobs(body, gen, current, controller) {
  state.reads = new Map();
  state.selected = 0;
  return [...panels.values()].map((panel) => {
    panel.setLoading(gen);
    return track(api.read(panel.name, body, controller.signal))
      .then(({ data, rtt }) => {
        if (!current()) return null;
        state.reads.set(panel.name, { data, rtt });
        panel.setNumber(data, rtt, gen, state.selected);
        if (!state.file) showBoxes(boxedDigits()); // boxes on the pad's picture
        if (panel.name === attention.selectedModel) selectDigit(state.selected, gen);
        return data;
      })
      .catch((err) => {
        if (!isAbort(err) && current()) {
          panel.setError(describe(err), gen);
          // No answer for this drawing yet: the boxes on the pad belong to an older one.
          if (state.reads.size === 0) showBoxes([]);
        }
        return null;
      });
  });
}

/** The digits of the first panel, in the panels' order, whose answer found any: the same boxes
 * whichever answer arrives first (the models choose the split, and may differ). */
function boxedDigits() {
  for (const name of panels.keys()) {
    const digits = state.reads.get(name)?.data.digits;
    if (digits && digits.length) return digits;
  }
  return [];
}

/** Outline each digit found on the pad, and under the pad a button per digit that selects it.
 * The outlines take no clicks: a stroke that begins inside a digit's box is drawn, not lost. */
function showBoxes(digits) {
  const layer = $("pad-boxes");
  const picker = $("digit-picker");
  layer.replaceChildren();
  picker.replaceChildren();
  const [w, h] = [Math.round(280 * pad.aspect), 280]; // the picture that was sent
  const grow = state.overhang * h; // its pen may be finer than the pad's: outline the ink shown
  digits.forEach((d, i) => {
    const [x0, y0, x1, y1] = [d.box[0] - grow, d.box[1] - grow, d.box[2] + grow, d.box[3] + grow];
    const box = document.createElement("div");
    box.className = "digit-box";
    box.dataset.testid = `digit-box-${i}`;
    box.style.left = `${(100 * x0) / w}%`;
    box.style.top = `${(100 * y0) / h}%`;
    box.style.width = `${(100 * (x1 - x0)) / w}%`;
    box.style.height = `${(100 * (y1 - y0)) / h}%`;
    layer.append(box);
    const btn = document.createElement("button");
    btn.type = "button";
    btn.className = "digit-pick";
    btn.dataset.testid = `digit-pick-${i}`;
    btn.textContent = String(i + 1);
    btn.dataset.centre = String((x0 + x1) / 2 / w); // under its digit, where the others leave room
    btn.dataset.line = String(d.line ?? 0);
    btn.setAttribute("aria-label", `Digit ${i + 1}: show its probabilities`);
    btn.addEventListener("click", () => selectDigit(i, state.generation));
    picker.append(btn);
  });
  picker.hidden = digits.length === 0;
  placePicks();
  markSelected();
}

/** Lay the digit buttons out for the picker's width (again whenever it changes). */
function placePicks() {
  const picker = $("digit-picker");
  if (picker.hidden) return;
  picker.style.height = `${layoutPicks(picker) * ROW_HEIGHT}px`;
}

new ResizeObserver(placePicks).observe($("digit-picker"));

function markSelected() {
  for (const [i, box] of [...$("pad-boxes").children].entries()) box.dataset.selected = String(i === state.selected);
  for (const [i, btn] of [...$("digit-picker").children].entries()) btn.setAttribute("aria-pressed", String(i === state.selected));
}

function selectDigit(index, gen) {
  state.selected = index;
  markSelected();
  for (const panel of panels.values()) {
    const r = state.reads.get(panel.name);
    if (r) panel.setNumber(r.data, r.rtt, gen, index);
  }
  const r = state.reads.get(attention.selectedModel) || [...state.reads.values()][0];
  const digit = r && r.data.digits[index];
  if (!digit || !digit.input) return;
  drawInput(preview, digit.input);
  preview.dataset.state = "done";
  const model = attention.selectedModel;
  if (!model) return;
  track(api.attentionPixels(model, digit.input, state.controller && state.controller.signal))
    .then(({ data }) => {
      if (gen === state.generation && state.selected === index) attention.setData(data);
    })
    .catch((err) => {
      if (!isAbort(err) && gen === state.generation) attention.clear(describe(err));
    });
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
  if (!empty) state.file = null; // drawing replaces a picture the pad could not show
  prompt.hidden = !empty || state.file !== null;
  $("undo").disabled = empty;
  padWrap.dataset.strokes = String(pad.strokeCount());
  say(state.file ? fileNote(state.file) : "", "note");
  if (empty && !state.file) resetResults();
  else schedule(e.detail.final);
});

function clearAll() {
  state.file = null;
  pad.clear();
  prompt.hidden = false;
  say("");
  resetResults();
}

$("clear").addEventListener("click", clearAll);
$("undo").addEventListener("click", () => pad.undo());

async function useFile(file) {
  if (!file) return;
  try {
    const { source, background } = await loadImageFile(file);
    state.file = null;
    pad.setImage(source, background);
  } catch (err) {
    if (!(err instanceof UndecodableImage)) {
      say(err.message);
      return;
    }
    // HEIC or TIFF, say: the server reads what the browser cannot show, so the file goes as it is.
    let image;
    try {
      image = await readDataURL(file);
    } catch (readErr) {
      say(`Could not read ${file.name || "the file"}: ${readErr && readErr.message}`);
      return;
    }
    state.file = null;
    pad.clear();
    state.file = { name: file.name || "the file", image };
    prompt.hidden = true;
    say(fileNote(state.file), "note");
    predictNow();
  }
}

/** The line under the pad: a note (a picture the pad cannot show) or an error (the default). A screen
 * reader announces an error at once (alert) and a note when it is idle (status). */
function say(text, kind = "error") {
  const el = $("pad-message");
  el.setAttribute("role", kind === "note" ? "status" : "alert");
  el.textContent = text;
  el.dataset.kind = kind;
}

function fileNote(file) {
  return `This browser cannot show ${file.name}: the models read it on the server (the input they saw is shown).`;
}

function readDataURL(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
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
    clearAll();
  } else if ((e.ctrlKey || e.metaKey) && !e.shiftKey && e.key.toLowerCase() === "z") {
    e.preventDefault();
    pad.undo();
  }
});

attention.onModelChange = () => predictNow();

$("mode").addEventListener("change", (e) => {
  state.mode = e.target.checked ? "number" : "digit";
  app.dataset.mode = state.mode;
  $("pad-title").textContent = e.target.checked ? "Write a number" : "Draw a digit";
  $("pad-hint").textContent = e.target.checked ? "Several digits, left to right" : "One digit, 0–9, as large as the pad";
  prompt.querySelector("span").textContent = e.target.checked ? "Write a number" : "Draw a digit";
  pad.setAspect(e.target.checked ? 3 : 1);
});

resetResults();
connect();
