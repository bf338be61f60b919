// Perceptually uniform colormaps (matplotlib's inferno and viridis), sampled at 11 stops and
// interpolated linearly in sRGB; close enough to the 256-entry tables for a heat-map.

const STOPS = {
  inferno: ["#000004", "#160b39", "#420a68", "#6a176e", "#932667", "#bc3754",
            "#dd513a", "#f37819", "#fca50a", "#f6d746", "#fcffa4"],
  viridis: ["#440154", "#482475", "#414487", "#355f8d", "#2a788e", "#21918c",
            "#22a884", "#44bf70", "#7ad151", "#bddf26", "#fde725"],
};

function hexToRgb(hex) {
  const n = parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

const tables = new Map();

/** A 256-entry lookup table: Uint8ClampedArray of r,g,b triples. */
export function colormapTable(name) {
  if (tables.has(name)) return tables.get(name);
  const stops = (STOPS[name] || STOPS.inferno).map(hexToRgb);
  const lut = new Uint8ClampedArray(256 * 3);
  for (let i = 0; i < 256; i++) {
    const t = (i / 255) * (stops.length - 1);
    const k = Math.min(Math.floor(t), stops.length - 2);
    const f = t - k;
    for (let c = 0; c < 3; c++) lut[i * 3 + c] = stops[k][c] + (stops[k + 1][c] - stops[k][c]) * f;
  }
  tables.set(name, lut);
  return lut;
}

export const COLORMAPS = Object.keys(STOPS);
