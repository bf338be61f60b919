// Rendering of the model input (28x28) and of a patch-grid attention map over it.

import { colormapTable } from "./colormaps.js";

/** Draw a 28x28 array of 0..1 floats (white digit on black) into a 28x28 canvas. */
export function drawInput(canvas, input) {
  const h = input.length;
  const w = input[0].length;
  canvas.width = w;
  canvas.height = h;
  const ctx = canvas.getContext("2d");
  const img = ctx.createImageData(w, h);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const v = Math.round(Math.max(0, Math.min(1, input[y][x])) * 255);
      const o = (y * w + x) * 4;
      img.data[o] = img.data[o + 1] = img.data[o + 2] = v;
      img.data[o + 3] = 255;
    }
  }
  ctx.putImageData(img, 0, 0);
}

export function clearCanvas(canvas) {
  canvas.getContext("2d").clearRect(0, 0, canvas.width, canvas.height);
}

/** Bilinear sample of a grid x grid map at continuous grid coordinates (cell centres at i + 0.5). */
function sampleGrid(values, grid, gx, gy) {
  const x = Math.max(0, Math.min(grid - 1, gx - 0.5));
  const y = Math.max(0, Math.min(grid - 1, gy - 0.5));
  const x0 = Math.floor(x);
  const y0 = Math.floor(y);
  const x1 = Math.min(grid - 1, x0 + 1);
  const y1 = Math.min(grid - 1, y0 + 1);
  const fx = x - x0;
  const fy = y - y0;
  const top = values[y0 * grid + x0] * (1 - fx) + values[y0 * grid + x1] * fx;
  const bottom = values[y1 * grid + x0] * (1 - fx) + values[y1 * grid + x1] * fx;
  return top * (1 - fy) + bottom * fy;
}

/**
 * Paint `values` (grid*grid attention weights) upsampled over `input` (28x28, 0..1) into `canvas`.
 * The colours span the map's own range (min..max, as the legend says); the digit is blended on
 * top in white so its strokes stay visible. Returns {min, max} of the raw values for the legend.
 */
export function drawHeatmap(canvas, input, values, grid, { cmap = "inferno", showGrid = false, digit = 0.45 } = {}) {
  const size = canvas.width;
  const ctx = canvas.getContext("2d");
  const img = ctx.createImageData(size, size);
  const lut = colormapTable(cmap);
  let max = 0;
  let min = Infinity;
  for (const v of values) {
    if (v > max) max = v;
    if (v < min) min = v;
  }
  const scale = max > min ? 1 / (max - min) : 0;
  const rows = input ? input.length : 28;
  for (let py = 0; py < size; py++) {
    const iy = ((py + 0.5) / size) * rows;
    for (let px = 0; px < size; px++) {
      const ix = ((px + 0.5) / size) * rows;
      const heat = (sampleGrid(values, grid, (ix / rows) * grid, (iy / rows) * grid) - min) * scale;
      const k = Math.max(0, Math.min(255, Math.round(heat * 255))) * 3;
      const d = input ? input[Math.floor(iy)][Math.floor(ix)] * digit : 0;
      const o = (py * size + px) * 4;
      img.data[o] = lut[k] * (1 - d) + 255 * d;
      img.data[o + 1] = lut[k + 1] * (1 - d) + 255 * d;
      img.data[o + 2] = lut[k + 2] * (1 - d) + 255 * d;
      img.data[o + 3] = 255;
    }
  }
  ctx.putImageData(img, 0, 0);
  if (showGrid) {
    ctx.strokeStyle = "rgba(255,255,255,0.35)";
    ctx.lineWidth = Math.max(1, size / 280);
    ctx.beginPath();
    for (let i = 1; i < grid; i++) {
      const p = Math.round((i * size) / grid) + 0.5;
      ctx.moveTo(p, 0);
      ctx.lineTo(p, size);
      ctx.moveTo(0, p);
      ctx.lineTo(size, p);
    }
    ctx.stroke();
  }
  return { min, max };
}

/** Fill a 256x1 canvas with the colormap, shown stretched as the legend bar. */
export function drawLegend(canvas, cmap) {
  const lut = colormapTable(cmap);
  canvas.width = 256;
  canvas.height = 1;
  const ctx = canvas.getContext("2d");
  const img = ctx.createImageData(256, 1);
  for (let i = 0; i < 256; i++) {
    img.data[i * 4] = lut[i * 3];
    img.data[i * 4 + 1] = lut[i * 3 + 1];
    img.data[i * 4 + 2] = lut[i * 3 + 2];
    img.data[i * 4 + 3] = 255;
  }
  ctx.putImageData(img, 0, 0);
}
