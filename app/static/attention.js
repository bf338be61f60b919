// The attention card: CLS attention of a ViT as a heat-map over the input, per layer and head,
// the head mean, or the rollout through all layers; plus a strip of per-layer thumbnails.

import { clearCanvas, drawHeatmap, drawLegend } from "./heatmap.js";

const $ = (id) => document.getElementById(id);

export class AttentionView {
  constructor() {
    this.card = $("attention-card");
    this.canvas = $("attention");
    this.empty = $("attention-empty");
    this.caption = $("attention-caption");
    this.layer = $("attn-layer");
    this.head = $("attn-head");
    this.cmap = $("attn-cmap");
    this.grid = $("attn-grid");
    this.model = $("attn-model");
    this.modelField = $("attn-model-field");
    this.strip = $("attn-strip");
    this.legendBar = $("legend-bar");
    this.legendMin = $("legend-min");
    this.legendMax = $("legend-max");
    this.data = null;
    this.shape = "";
    for (const el of [this.layer, this.head, this.cmap, this.grid]) {
      el.addEventListener("change", () => this.render());
    }
    this.model.addEventListener("change", () => this.onModelChange && this.onModelChange(this.model.value));
    this.render();
  }

  /** Show the card when at least one served model supports attention; build its controls. */
  setModels(infos) {
    this.card.hidden = infos.length === 0;
    this.model.replaceChildren(...infos.map((m) => new Option(m.name, m.name)));
    this.modelField.hidden = infos.length < 2;
    const arch = (infos[0] && infos[0].architecture) || {};
    if (arch.depth && arch.heads) this.#ensureControls(arch.depth, arch.heads);
    this.render();
  }

  get selectedModel() {
    return this.model.value || null;
  }

  clear(message = "Draw a digit to see the attention map") {
    this.data = null;
    this.empty.textContent = message;
    this.empty.hidden = false;
    this.card.dataset.state = "empty";
    this.caption.textContent = "";
    clearCanvas(this.canvas);
    for (const c of this.strip.querySelectorAll("canvas")) clearCanvas(c);
  }

  setData(data) {
    this.data = data;
    this.empty.hidden = true;
    this.#ensureControls(data.layers, data.heads);
    this.render();
    this.card.dataset.state = "done";
  }

  #ensureControls(layers, heads) {
    const shape = `${layers}x${heads}`;
    if (shape === this.shape) return;
    this.shape = shape;
    const layerValue = this.layer.value;
    const headValue = this.head.value;
    this.layer.replaceChildren(new Option("Rollout (all layers)", "rollout"));
    for (let l = 1; l <= layers; l++) this.layer.append(new Option(`Layer ${l}`, String(l)));
    this.head.replaceChildren(new Option("Mean of heads", "mean"));
    for (let h = 1; h <= heads; h++) this.head.append(new Option(`Head ${h}`, String(h)));
    if ([...this.layer.options].some((o) => o.value === layerValue)) this.layer.value = layerValue;
    if ([...this.head.options].some((o) => o.value === headValue)) this.head.value = headValue;

    this.strip.replaceChildren();
    const entries = [...Array(layers).keys()].map((l) => [String(l + 1), `L${l + 1}`, `Layer ${l + 1}`]);
    entries.push(["rollout", "Rollout", "Rollout"]);
    for (const [value, short, long] of entries) {
      const btn = document.createElement("button");
      btn.type = "button";
      btn.className = "thumb";
      btn.dataset.layer = value;
      btn.dataset.testid = `attention-thumb-${value}`;
      btn.setAttribute("aria-label", `Show ${long}`);
      const c = document.createElement("canvas");
      c.width = c.height = 84;
      const span = document.createElement("span");
      span.textContent = short;
      btn.append(c, span);
      btn.addEventListener("click", () => {
        this.layer.value = value;
        this.render();
      });
      this.strip.append(btn);
    }
  }

  #values(layer, head) {
    const d = this.data;
    if (layer === "rollout") return d.rollout;
    const l = Number(layer) - 1;
    if (head === "mean") return d.attention_mean ? d.attention_mean[l] : meanOf(d.attention[l]);
    return d.attention[l][Number(head) - 1];
  }

  render() {
    const cmap = this.cmap.value;
    drawLegend(this.legendBar, cmap);
    const layer = this.layer.value;
    this.head.disabled = layer === "rollout";
    for (const btn of this.strip.querySelectorAll(".thumb")) {
      btn.setAttribute("aria-pressed", String(btn.dataset.layer === layer));
    }
    const d = this.data;
    if (!d) return;
    const grid = d.grid_size || Math.round(Math.sqrt(d.rollout.length));
    const values = this.#values(layer, this.head.value);
    const opts = { cmap, showGrid: this.grid.checked };
    const { min, max } = drawHeatmap(this.canvas, d.input, values, grid, opts);
    this.legendMin.textContent = min.toFixed(3);
    this.legendMax.textContent = max.toFixed(3);
    const peak = values.indexOf(max);
    const where = `peak ${max.toFixed(3)} at patch row ${Math.floor(peak / grid) + 1}, column ${(peak % grid) + 1}`;
    const what =
      layer === "rollout"
        ? `Rollout through ${d.layers} layers`
        : `Layer ${layer}, ${this.head.value === "mean" ? "mean of heads" : `head ${this.head.value}`}`;
    this.caption.textContent = `${what}: ${where}.`;
    this.canvas.setAttribute("aria-label", `Attention heat-map, ${what.toLowerCase()}, ${where}`);
    this.canvas.dataset.layer = layer;
    this.canvas.dataset.head = layer === "rollout" ? "" : this.head.value;
    for (const btn of this.strip.querySelectorAll(".thumb")) {
      const v = this.#values(btn.dataset.layer, "mean");
      drawHeatmap(btn.querySelector("canvas"), d.input, v, grid, { cmap, digit: 0.35 });
    }
  }
}

function meanOf(rows) {
  const out = new Array(rows[0].length).fill(0);
  for (const r of rows) r.forEach((v, i) => (out[i] += v / rows.length));
  return out;
}
