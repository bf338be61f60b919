// The drawing pad: pointer events (mouse, touch, pen), smoothed strokes kept as vectors in
// 0..1 pad coordinates so the pad can be redrawn at any size, undo, and an optional image layer.
//
// Emits "change" events with detail {final}: final=false while a stroke is still being drawn,
// final=true when a stroke ends, on undo, clear and when an image is loaded.

const INK = "#111111";
const PAPER = "#ffffff";
// Stroke width as a fraction of the pad side: a thick marker. A digit drawn over about two
// thirds of the pad then has MNIST's stroke-to-height ratio after the server crops it to 20 px.
const STROKE_FRACTION = 0.075;
// The picture sent is drawn with a pen at most this share of the writing's height (its tallest
// stroke's centre line, top to bottom: a digit's height, on one line or several), and never under
// MIN_PEN_FRACTION of the pad: a digit written in a corner would otherwise reach the server as a blob
// of ink (MNIST's strokes are ~0.13 of its height). The pad shows the marker; the server thickens a
// thin pen, it cannot thin a thick one.
const PEN_PER_HEIGHT = 0.15;
const MIN_PEN_FRACTION = 0.01;
const MIN_STEP = 0.004; // drop points closer than this (in pad units) to the previous one
// What /read takes as strokes (app/schemas.py); a drawing with more goes as its picture.
const MAX_STROKES = 256;
const MAX_POINTS = 20000;

export class Pad extends EventTarget {
  constructor(canvas) {
    super();
    this.canvas = canvas;
    this.ctx = canvas.getContext("2d");
    this.items = []; // {kind: "stroke", points: [[x, y], ...]} | {kind: "image", source, background}
    this.activeId = null;
    this.current = null;
    this.frame = 0;
    this.aspect = 1; // width / height: 1 for one digit, 3 for a number
    this.#bindPointer();
    new ResizeObserver(() => this.#resize()).observe(canvas);
    this.#resize();
  }

  isEmpty() {
    return this.items.length === 0;
  }

  /** A stroke is under way (the pen is down): more of the drawing is coming. */
  isDrawing() {
    return this.activeId !== null;
  }

  strokeCount() {
    return this.items.filter((it) => it.kind === "stroke").length;
  }

  clear() {
    this.#cancelStroke();
    if (this.items.length === 0) return;
    this.items = [];
    this.#redraw();
    this.#emit(true);
  }

  undo() {
    this.#cancelStroke();
    if (this.items.length === 0) return;
    this.items.pop();
    this.#redraw();
    this.#emit(true);
  }

  /** Replace the pad content by an image (drawn to fit) on the given background colour. */
  setImage(source, background = PAPER) {
    this.#cancelStroke();
    this.items = [{ kind: "image", source, background }];
    this.#redraw();
    this.#emit(true);
  }

  /** Wide pad for numbers (3) or square for one digit (1); the drawing is cleared. */
  setAspect(aspect) {
    if (aspect === this.aspect) return;
    this.aspect = aspect;
    this.#cancelStroke();
    this.items = [];
    this.#resize();
    this.#redraw();
    this.#emit(true);
  }

  /** The picture sent: `image`, a PNG data URL of the pad rendered `size` pixels high (ink on paper),
   * as wide as the pad, its strokes drawn with the upload's pen (`uploadPen`); `strokes`, the same
   * drawing as its strokes in that picture's pixels (the body /read takes; null when the pad holds an
   * image); and `overhang`, how far the ink shown reaches past that ink, as a share of the pad's
   * height: what a box found on the picture grows by on each side to outline the writing on the pad. */
  upload(size = 280) {
    const pen = this.uploadPen();
    const out = document.createElement("canvas");
    out.height = size;
    out.width = Math.round(size * this.aspect);
    this.#render(out.getContext("2d"), out.width, out.height, pen);
    const onlyStrokes = this.items.length > 0 && this.items.every((it) => it.kind === "stroke");
    const pointCount = this.items.reduce((n, it) => n + (it.points ? it.points.length : 0), 0);
    const fits = this.items.length <= MAX_STROKES && pointCount <= MAX_POINTS; // else the picture alone
    const round = (v) => Math.round(v * 100) / 100;
    const inPixels = ({ points }) => points.map(([x, y]) => [round(x * out.width), round(y * size)]);
    const strokes = onlyStrokes && fits
      ? { strokes: this.items.map(inPixels), width: out.width, height: size, pen: round(pen * size) }
      : null;
    return { image: out.toDataURL("image/png"), strokes, overhang: (STROKE_FRACTION - pen) / 2 };
  }

  /** The pen the picture sent is drawn with, as a share of the pad's height: the marker shown, or a
   * finer one for small writing (PEN_PER_HEIGHT of its tallest stroke's height). */
  uploadPen() {
    const strokes = this.items.filter((it) => it.kind === "stroke");
    if (strokes.length === 0) return STROKE_FRACTION; // an image alone
    let height = 0;
    for (const { points } of strokes) {
      let [top, bottom] = [Infinity, -Infinity];
      for (const [, y] of points) [top, bottom] = [Math.min(top, y), Math.max(bottom, y)];
      height = Math.max(height, bottom - top);
    }
    return Math.min(STROKE_FRACTION, Math.max(MIN_PEN_FRACTION, PEN_PER_HEIGHT * height));
  }

  #emit(final) {
    this.dispatchEvent(new CustomEvent("change", { detail: { final } }));
  }

  #resize() {
    const rect = this.canvas.getBoundingClientRect();
    const dpr = window.devicePixelRatio || 1;
    const width = Math.max(1, Math.round(rect.width * dpr));
    const height = Math.max(1, Math.round(width / this.aspect));
    if (this.canvas.width !== width || this.canvas.height !== height) {
      this.canvas.width = width;
      this.canvas.height = height;
      this.#redraw();
    }
  }

  #redraw() {
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.#render(this.ctx, this.canvas.width, this.canvas.height);
  }

  #scheduleRedraw() {
    if (!this.frame) this.frame = requestAnimationFrame(() => this.#redraw());
  }

  #render(ctx, width, height, pen = STROKE_FRACTION) {
    ctx.save();
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = PAPER;
    ctx.fillRect(0, 0, width, height);
    for (const item of this.items) {
      if (item.kind === "image") drawImageFit(ctx, item, width, height);
      else drawStroke(ctx, item.points, width, height, pen);
    }
    ctx.restore();
  }

  #point(e) {
    const rect = this.canvas.getBoundingClientRect();
    return [(e.clientX - rect.left) / rect.width, (e.clientY - rect.top) / rect.height];
  }

  #cancelStroke() {
    if (this.activeId !== null && this.canvas.hasPointerCapture?.(this.activeId)) {
      this.canvas.releasePointerCapture(this.activeId);
    }
    this.activeId = null;
    this.current = null;
  }

  #bindPointer() {
    const c = this.canvas;
    c.addEventListener("pointerdown", (e) => {
      if (this.activeId !== null) return; // one stroke at a time; ignore a second finger
      if (e.pointerType === "mouse" && e.button !== 0) return;
      e.preventDefault();
      c.setPointerCapture(e.pointerId);
      this.activeId = e.pointerId;
      this.current = { kind: "stroke", points: [this.#point(e)] };
      this.items.push(this.current);
      this.#scheduleRedraw();
      this.#emit(false);
    });
    c.addEventListener("pointermove", (e) => {
      if (e.pointerId !== this.activeId || !this.current) return;
      e.preventDefault();
      const events = e.getCoalescedEvents ? e.getCoalescedEvents() : [];
      const pts = this.current.points;
      for (const ev of events.length ? events : [e]) {
        const p = this.#point(ev);
        const last = pts[pts.length - 1];
        if (Math.hypot(p[0] - last[0], p[1] - last[1]) >= MIN_STEP) pts.push(p);
      }
      this.#scheduleRedraw();
      this.#emit(false);
    });
    const end = (e) => {
      if (e.pointerId !== this.activeId) return;
      this.activeId = null;
      this.current = null;
      this.#redraw();
      this.#emit(true);
    };
    c.addEventListener("pointerup", end);
    c.addEventListener("pointercancel", end);
    c.addEventListener("lostpointercapture", end);
    c.addEventListener("contextmenu", (e) => e.preventDefault());
  }
}

/** A stroke through the midpoints of its samples with quadratic curves: smooth, no overshoot.
 * The pen's width (`pen`) is a share of the pad's height, so a wide pad writes digits as thick as a
 * square one. */
function drawStroke(ctx, points, width, height, pen) {
  ctx.strokeStyle = INK;
  ctx.fillStyle = INK;
  ctx.lineWidth = pen * height;
  ctx.lineCap = "round";
  ctx.lineJoin = "round";
  const p = points.map(([x, y]) => [x * width, y * height]);
  if (p.length === 1) {
    ctx.beginPath();
    ctx.arc(p[0][0], p[0][1], ctx.lineWidth / 2, 0, Math.PI * 2);
    ctx.fill();
    return;
  }
  ctx.beginPath();
  ctx.moveTo(p[0][0], p[0][1]);
  for (let i = 1; i < p.length - 1; i++) {
    const mx = (p[i][0] + p[i + 1][0]) / 2;
    const my = (p[i][1] + p[i + 1][1]) / 2;
    ctx.quadraticCurveTo(p[i][0], p[i][1], mx, my);
  }
  const last = p[p.length - 1];
  ctx.lineTo(last[0], last[1]);
  ctx.stroke();
}

function drawImageFit(ctx, item, width, height) {
  const { source, background } = item;
  const w = source.width;
  const h = source.height;
  const s = Math.min(width / w, height / h);
  ctx.fillStyle = background;
  ctx.fillRect(0, 0, width, height);
  ctx.imageSmoothingEnabled = true;
  ctx.imageSmoothingQuality = "high";
  ctx.drawImage(source, (width - w * s) / 2, (height - h * s) / 2, w * s, h * s);
}

/** The browser could not decode the file (HEIC and TIFF in most browsers); the server can. */
export class UndecodableImage extends Error {}

/** A format the server decodes and browsers often do not, by its first bytes: TIFF, or an ISO media
 * file (HEIC, HEIF, AVIF). A broken PNG or JPEG is not sent: the browser's verdict stands. */
async function serverReads(file) {
  const b = new Uint8Array(await file.slice(0, 12).arrayBuffer());
  const text = (from, to) => String.fromCharCode(...b.slice(from, to));
  const tiff = text(0, 4) === "II*\0" || text(0, 4) === "MM\0*";
  return tiff || text(4, 8) === "ftyp";
}

/**
 * Decode an image file and pick the background it should sit on: images with a transparent
 * background get black behind light ink and white behind dark ink, so the ink stays visible.
 */
export async function loadImageFile(file) {
  if (file.type && !file.type.startsWith("image/")) {
    throw new Error(`${file.name || "The file"} is not an image (${file.type})`);
  }
  let bitmap;
  try {
    bitmap = await createImageBitmap(file);
  } catch {
    if (await serverReads(file)) throw new UndecodableImage(`This browser cannot show ${file.name || "the file"}`);
    throw new Error(`Could not read ${file.name || "the file"} as an image`);
  }
  const probe = document.createElement("canvas");
  const n = 64;
  probe.width = probe.height = n;
  const pctx = probe.getContext("2d", { willReadFrequently: true });
  pctx.drawImage(bitmap, 0, 0, n, n);
  const data = pctx.getImageData(0, 0, n, n).data;
  let transparent = 0;
  let inkLum = 0;
  let inkWeight = 0;
  for (let i = 0; i < data.length; i += 4) {
    const a = data[i + 3] / 255;
    if (a < 0.5) transparent++;
    inkLum += a * (0.299 * data[i] + 0.587 * data[i + 1] + 0.114 * data[i + 2]);
    inkWeight += a;
  }
  let background = PAPER;
  if (transparent > (n * n) / 4 && inkWeight > 0 && inkLum / inkWeight > 128) background = "#000000";
  return { source: bitmap, background };
}
