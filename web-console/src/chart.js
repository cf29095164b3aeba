// Small hand-written SVG line charts: one or two series over time, scaled to the largest value.

const SVG = 'http://www.w3.org/2000/svg';
const WIDTH = 320;    // viewBox units; the SVG scales to its box (CSS width: 100%)
const HEIGHT = 96;
const PAD_TOP = 14;   // room for the max label
const PAD_BOTTOM = 4;

function svg(tag, attrs = {}) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

/**
 * A chart box: title, latest value of each series, and the lines.
 * series: [{name, points: [{t: ms, v: number}], cls: 'a'|'b'}]; format: value -> text.
 */
export function lineChart(title, series, format, { testid } = {}) {
  const all = series.flatMap((s) => s.points);
  const max = Math.max(1e-9, ...all.map((p) => p.v));
  const t0 = all.length ? Math.min(...all.map((p) => p.t)) : 0;
  const t1 = all.length ? Math.max(...all.map((p) => p.t)) : 1;
  const width = Math.max(1, t1 - t0);
  const x = (t) => ((t - t0) / width) * WIDTH;
  const y = (v) => HEIGHT - PAD_BOTTOM - (v / max) * (HEIGHT - PAD_TOP - PAD_BOTTOM);

  const root = svg('svg', { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, preserveAspectRatio: 'none', class: 'chart-svg', role: 'img' });
  const label = svg('title');
  label.textContent = title;
  root.append(label);
  for (const gy of [PAD_TOP, (PAD_TOP + HEIGHT - PAD_BOTTOM) / 2, HEIGHT - PAD_BOTTOM]) {
    root.append(svg('line', { x1: 0, x2: WIDTH, y1: gy, y2: gy, class: 'grid' }));
  }
  for (const s of series) {
    if (s.points.length === 0) continue;
    const pts = s.points.map((p) => `${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`);
    if (s.points.length === 1) pts.push(`${WIDTH},${y(s.points[0].v).toFixed(1)}`);
    root.append(svg('polyline', { points: pts.join(' '), class: `line ${s.cls || 'a'}`, 'vector-effect': 'non-scaling-stroke' }));
  }

  const box = document.createElement('figure');
  box.className = 'chart';
  if (testid) box.dataset.testid = testid;
  const caption = document.createElement('figcaption');
  const name = document.createElement('span');
  name.textContent = title;
  caption.append(name);
  for (const s of series) {
    const last = s.points.length ? s.points[s.points.length - 1].v : null;
    const v = document.createElement('span');
    v.className = `value ${s.cls || 'a'}`;
    v.textContent = `${series.length > 1 ? `${s.name} ` : ''}${last === null ? '-' : format(last)}`;
    caption.append(v);
  }
  // Scale and time span as HTML: SVG text would stretch with preserveAspectRatio="none".
  const axis = document.createElement('div');
  axis.className = 'chart-axis';
  const clock = (t) => new Date(t).toISOString().slice(11, 19);
  axis.textContent = all.length
    ? `top line ${format(max)} · ${clock(t0)} to ${clock(t1)} UTC · ${all.length > series.length ? 'sampled' : 'one sample so far'}`
    : 'waiting for samples';
  box.append(caption, root, axis);
  return box;
}

/** Appends {t, v} to a ring of at most `max` points (drops the oldest). */
export function pushPoint(points, t, v, max) {
  points.push({ t, v });
  while (points.length > max) points.shift();
  return points;
}

/**
 * A small histogram as rows of horizontal bars: label, bar scaled to the largest count, count.
 * rows: [{label, count}]; each row is a table row (data-testid `${testid}-row`) so its numbers
 * stay text. Bars are SVG rects (the console's CSP allows no inline styles).
 */
export function barRows(rows, format, { testid } = {}) {
  const max = Math.max(1, ...rows.map((r) => r.count));
  const body = rows.map((r) => {
    const bar = svg('svg', { viewBox: '0 0 100 10', preserveAspectRatio: 'none', class: 'bar-svg', role: 'img' });
    bar.append(svg('rect', { x: 0, y: 0, height: 10, width: ((r.count / max) * 100).toFixed(2), class: 'bar' }));
    const tr = document.createElement('tr');
    if (testid) tr.dataset.testid = `${testid}-row`;
    const label = document.createElement('td');
    label.textContent = r.label;
    const barCell = document.createElement('td');
    barCell.className = 'bar-cell';
    barCell.append(bar);
    const count = document.createElement('td');
    count.className = 'num';
    count.textContent = format(r.count);
    tr.append(label, barCell, count);
    return tr;
  });
  const table = document.createElement('table');
  table.className = 'bars';
  if (testid) table.dataset.testid = testid;
  const tbody = document.createElement('tbody');
  tbody.append(...body);
  table.append(tbody);
  return table;
}
