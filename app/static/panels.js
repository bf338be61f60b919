// One result panel per served model: header with the model card's facts, the predicted digit,
// confidence, latency and a meter per class probability.

const ARCH_NAMES = { vit: "ViT", cnn: "CNN" };
// Under this confidence a whole reading (/read) is more likely wrong than right: the page says so.
const UNLIKELY = 0.5;

export function formatParams(n) {
  if (!Number.isFinite(n)) return "–";
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)} M`;
  if (n >= 1e3) return `${Math.round(n / 1e3)} k`;
  return String(n);
}

export function formatPercent(p, digits = 1) {
  if (!Number.isFinite(p)) return "–";
  const v = p * 100;
  if (v > 0 && v < 0.1) return "<0.1%";
  return `${v.toFixed(digits)}%`;
}

function formatMs(ms) {
  if (!Number.isFinite(ms)) return "–";
  return ms < 10 ? `${ms.toFixed(1)} ms` : `${Math.round(ms)} ms`;
}

export class ModelPanel {
  constructor(info, template) {
    this.info = info;
    this.name = info.name;
    const el = template.content.firstElementChild.cloneNode(true);
    this.el = el;
    el.dataset.model = info.name;
    el.dataset.testid = `panel-${info.name}`;
    el.dataset.generation = "0";
    el.setAttribute("aria-label", `${info.name} prediction`);
    el.querySelector(".model-name").textContent = info.name;
    const arch = el.querySelector(".model-arch");
    arch.textContent = ARCH_NAMES[info.arch] || info.arch || "model";
    arch.classList.add(`arch-${info.arch}`);
    el.querySelector(".meta-params").textContent = formatParams(info.num_params);
    const acc = info.metrics && info.metrics.test_accuracy;
    el.querySelector(".meta-acc").textContent = Number.isFinite(acc) ? formatPercent(acc, 2) : "–";
    el.querySelector(".meta-device").textContent = info.device || "–";

    this.digit = el.querySelector(".digit");
    this.digit.dataset.testid = `prediction-${info.name}`;
    this.digit.setAttribute("aria-label", `${info.name} predicts`);
    this.confidence = el.querySelector(".confidence-value");
    this.confidenceLabel = el.querySelector(".confidence-label");
    this.rtt = el.querySelector(".latency-rtt");
    this.server = el.querySelector(".latency-server");
    this.message = el.querySelector(".model-message");
    this.rows = [];
    const probs = el.querySelector(".probs");
    const labels = info.labels && info.labels.length ? info.labels : [..."0123456789"];
    labels.forEach((label) => {
      const row = document.createElement("div");
      row.className = "prob";
      row.setAttribute("role", "meter");
      row.setAttribute("aria-label", `Digit ${label}`);
      row.setAttribute("aria-valuemin", "0");
      row.setAttribute("aria-valuemax", "100");
      row.setAttribute("aria-valuenow", "0");
      row.dataset.label = label;
      row.innerHTML =
        '<span class="prob-label"></span><span class="prob-track"><span class="prob-fill"></span></span>' +
        '<span class="prob-value">–</span>';
      row.querySelector(".prob-label").textContent = label;
      probs.append(row);
      this.rows.push(row);
    });
    this.setEmpty();
  }

  #state(state, generation) {
    this.el.dataset.state = state;
    if (generation !== undefined) this.el.dataset.generation = String(generation);
  }

  setEmpty(message = "Draw a digit") {
    this.#state("empty");
    this.#blank(message, false);
  }

  /** No answer to show: dashes, no bars, and a message (an error or a prompt). */
  #blank(message, isError) {
    this.digit.textContent = "–";
    this.digit.dataset.long = "false";
    this.confidence.textContent = "–";
    this.confidenceLabel.textContent = "confidence";
    this.rtt.textContent = "–";
    this.server.textContent = "";
    this.message.textContent = message;
    this.message.classList.toggle("is-error", isError);
    this.#bars(null);
  }

  setLoading(generation) {
    this.#state("loading", generation);
  }

  setResult(res, rtt, generation) {
    this.#state("done", generation);
    this.digit.dataset.long = "false";
    // Scores of "is this a digit at all" arrive with calibrated models; older answers lack them.
    const notDigit = res.is_digit === false;
    this.digit.textContent = notDigit ? "?" : (res.label ?? String(res.digit));
    this.confidence.textContent = formatPercent(res.confidence);
    this.confidenceLabel.textContent = "confidence";
    this.rtt.textContent = `${formatMs(rtt)} round trip`;
    const t = res.timing || {};
    const parts = [];
    if (Number.isFinite(t.total_ms)) parts.push(`server ${formatMs(t.total_ms)}`);
    if (Number.isFinite(t.compute_ms)) parts.push(`compute ${formatMs(t.compute_ms)}`);
    this.server.textContent = parts.join(" · ");
    // A number sent as one digit: the server says what /read would read (the answer's `hint`).
    this.message.textContent = !notDigit
      ? ""
      : res.hint
        ? `This looks like the number ${res.hint.number}: turn on “Whole number” to read it.`
        : "This doesn't look like a digit.";
    this.message.classList.remove("is-error");
    this.#bars(res.probabilities, res.digit);
  }

  /** A whole number (/read): the text, and the selected digit's probabilities below it. */
  setNumber(data, rtt, generation, index) {
    const digits = data.digits || [];
    const chosen = digits[Math.min(index, digits.length - 1)];
    if (!chosen) return this.setError("No digits found", generation);
    this.setResult({ ...chosen, timing: data.timing }, rtt, generation);
    // The digits and the marks between them (12.5, -42, 12:30), line by line, left to right.
    const glyph = (item, text) => ({ line: item.line, x: (item.box[0] + item.box[2]) / 2, text });
    // A number written in two lines is shown in two, as the API's `text` has it.
    const glyphs = [
      ...digits.map((d) => glyph(d, d.is_digit === false ? "?" : d.label)),
      ...(data.marks || []).map((m) => glyph(m, m.mark)),
    ].sort((a, b) => a.line - b.line || a.x - b.x);
    const text = glyphs.map((g, i) => (i > 0 && g.line !== glyphs[i - 1].line ? "\n" : "") + g.text).join("");
    this.digit.textContent = text;
    this.digit.dataset.long = String(text.length > 2);
    this.digit.setAttribute("aria-label", `${this.name} reads`);
    // How sure the whole reading is (every digit and mark right), where the model has a digit score.
    const sure = Number.isFinite(data.confidence);
    if (sure) {
      this.confidence.textContent = formatPercent(data.confidence);
      this.confidenceLabel.textContent = "sure of the number";
    }
    const which = `Digit ${digits.indexOf(chosen) + 1} of ${digits.length}: ${chosen.label} (${formatPercent(chosen.confidence)})`;
    // Letters, words and shapes are read as digits too (an h as 17): the reading's confidence tells.
    const doubt = sure && data.confidence < UNLIKELY ? "Unlikely to read right, or not a number at all. " : "";
    this.message.textContent =
      doubt +
      (chosen.is_digit === false ? `${which} — this mark doesn't look like a digit.` : `${which}. Pick another under the pad.`);
  }

  setError(text, generation) {
    this.#state("error", generation);
    this.#blank(text, true);
  }

  #bars(probs, top) {
    this.rows.forEach((row, i) => {
      const p = probs ? probs[i] : 0;
      row.querySelector(".prob-fill").style.width = `${Math.max(0, Math.min(1, p)) * 100}%`;
      row.querySelector(".prob-value").textContent = probs ? formatPercent(p) : "–";
      row.setAttribute("aria-valuenow", (p * 100).toFixed(1));
      row.setAttribute("aria-valuetext", probs ? formatPercent(p) : "no prediction");
      row.classList.toggle("is-top", probs != null && i === top);
    });
  }
}
