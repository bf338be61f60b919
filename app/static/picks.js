/** Where the digit buttons under the pad go: each as near the centre of its digit as it can be
 * without covering another button or leaving the pad's width. Touching digits, or eight digits on a
 * phone, put their centres closer together than a button is wide. */

export const ROW_HEIGHT = 32; // px per row of buttons
const GAP = 4; // px between two buttons of a row

/**
 * Lay out the buttons of `picker` (each with data-centre, 0..1 across the pad, and data-line, its line
 * of writing) in rows: one per line of writing, or more where a line's buttons do not fit in one.
 * Returns the number of rows.
 */
export function layoutPicks(picker) {
  const width = picker.clientWidth;
  const lines = new Map();
  for (const btn of picker.children) {
    const line = Number(btn.dataset.line);
    if (!lines.has(line)) lines.set(line, []);
    lines.get(line).push(btn);
  }
  let row = 0;
  for (const line of [...lines.keys()].sort((a, b) => a - b)) {
    const btns = lines.get(line).sort((a, b) => a.dataset.centre - b.dataset.centre);
    for (const chunk of chunks(btns, width)) {
      const xs = spread(chunk.map((b) => b.dataset.centre * width), chunk.map((b) => b.offsetWidth), width);
      chunk.forEach((btn, i) => {
        btn.style.left = `${xs[i]}px`;
        btn.style.top = `${row * ROW_HEIGHT}px`;
      });
      row++;
    }
  }
  return row;
}

/** The buttons of one line cut into as few runs, of about equal count, as fit the width each. */
function chunks(btns, width) {
  const need = btns.reduce((sum, b) => sum + b.offsetWidth + GAP, -GAP);
  const count = Math.min(btns.length, Math.max(1, Math.ceil(need / Math.max(width, 1))));
  const size = Math.ceil(btns.length / count);
  const out = [];
  for (let i = 0; i < btns.length; i += size) out.push(btns.slice(i, i + size));
  return out;
}

/**
 * Centres for buttons of `widths` nearest (least squares) to `wanted`, in order, GAP apart, inside
 * [0, width]: pool-adjacent-violators on each button's implied start of the row, then clamped.
 */
export function spread(wanted, widths, width) {
  const offset = []; // each centre's distance from the row's left edge when packed tight
  let edge = 0;
  for (const w of widths) {
    offset.push(edge + w / 2);
    edge += w + GAP;
  }
  const packed = edge - GAP;
  const blocks = []; // [mean start, count], starts non-decreasing
  wanted.forEach((c, i) => {
    blocks.push([c - offset[i], 1]);
    while (blocks.length > 1 && blocks.at(-2)[0] > blocks.at(-1)[0]) {
      const [m, n] = blocks.pop();
      const last = blocks.at(-1);
      last[0] = (last[0] * last[1] + m * n) / (last[1] + n);
      last[1] += n;
    }
  });
  const starts = blocks.flatMap(([m, n]) => Array(n).fill(m));
  const most = Math.max(0, width - packed);
  return starts.map((s, i) => Math.min(Math.max(s, 0), most) + offset[i]);
}
