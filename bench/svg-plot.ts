// A small SVG line-chart writer for benchmark time series (the soak's samples): stacked panels that
// share the x axis, each with its own y scale and legend. No library: a plot is a few polylines.

export interface Series {
  readonly label: string;
  readonly values: readonly number[];
  readonly color: string;
}

export interface Panel {
  readonly title: string;
  /** Unit shown after the y-axis figures. */
  readonly unit: string;
  readonly series: readonly Series[];
  /** Draws the y axis from 0 (sizes), else from the smallest value. */
  readonly fromZero?: boolean;
}

const WIDTH = 900;
const PANEL_HEIGHT = 150;
const LEFT = 70;
const RIGHT = 50;
const TOP = 40;
const GAP = 40;

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function figure(n: number): string {
  if (n === 0) return '0';
  const abs = Math.abs(n);
  return abs >= 100 ? n.toFixed(0) : abs >= 10 ? n.toFixed(1) : n.toFixed(2);
}

/** One SVG document: `x` in minutes (shared), one panel per entry, top to bottom. */
export function linePlot(title: string, x: readonly number[], panels: readonly Panel[], note = ''): string {
  const height = TOP + panels.length * (PANEL_HEIGHT + GAP) + 10;
  const plotWidth = WIDTH - LEFT - RIGHT;
  const xMax = Math.max(1e-9, ...x);
  const px = (v: number): number => LEFT + (v / xMax) * plotWidth;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="${WIDTH}" height="${height}" fill="white"/>`,
    `<text x="${LEFT}" y="18" font-size="14" font-weight="bold">${escape(title)}</text>`,
    note ? `<text x="${LEFT}" y="32" fill="#555">${escape(note)}</text>` : '',
  ];
  panels.forEach((panel, i) => {
    const top = TOP + i * (PANEL_HEIGHT + GAP) + 14;
    const all = panel.series.flatMap((s) => s.values.filter((v) => Number.isFinite(v)));
    const hi = Math.max(...all, 1e-9);
    const lo = panel.fromZero === false ? Math.min(...all) : 0;
    const span = hi - lo || 1;
    const yMax = hi + span * 0.05;
    const yMin = panel.fromZero === false ? Math.max(0, lo - span * 0.05) : 0;
    const py = (v: number): number => top + PANEL_HEIGHT - ((v - yMin) / (yMax - yMin)) * PANEL_HEIGHT;
    out.push(`<text x="${LEFT}" y="${top - 6}" font-weight="bold">${escape(panel.title)}</text>`);
    out.push(`<rect x="${LEFT}" y="${top}" width="${plotWidth}" height="${PANEL_HEIGHT}" fill="none" stroke="#999"/>`);
    for (let t = 0; t <= 4; t++) {
      const v = yMin + ((yMax - yMin) * t) / 4;
      const y = py(v);
      out.push(`<line x1="${LEFT}" x2="${LEFT + plotWidth}" y1="${y.toFixed(1)}" y2="${y.toFixed(1)}" stroke="#eee"/>`);
      out.push(`<text x="${LEFT - 4}" y="${(y + 4).toFixed(1)}" text-anchor="end">${figure(v)} ${escape(panel.unit)}</text>`);
    }
    const ticks = Math.min(10, Math.max(1, Math.floor(xMax)));
    for (let t = 0; t <= ticks; t++) {
      const v = (xMax * t) / ticks;
      out.push(`<text x="${px(v).toFixed(1)}" y="${top + PANEL_HEIGHT + 13}" text-anchor="middle" fill="#555">${figure(v)} min</text>`);
    }
    let legendX = LEFT + Math.max(200, panel.title.length * 7 + 20);
    for (const s of panel.series) {
      const points = s.values
        .map((v, k) => (Number.isFinite(v) ? `${px(x[k]).toFixed(1)},${py(v).toFixed(1)}` : ''))
        .filter((p) => p !== '')
        .join(' ');
      out.push(`<polyline fill="none" stroke="${s.color}" stroke-width="1.5" points="${points}"/>`);
      out.push(`<rect x="${legendX}" y="${top - 14}" width="10" height="3" fill="${s.color}"/>`);
      out.push(`<text x="${legendX + 14}" y="${top - 9}">${escape(s.label)}</text>`);
      legendX += 20 + s.label.length * 6.5;
    }
  });
  out.push('</svg>');
  return out.filter((l) => l !== '').join('\n') + '\n';
}
