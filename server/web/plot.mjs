// A time-series line plot drawn on a <canvas> by hand (no library): the last `windowMs` of each
// series, y from 0 to a rounded maximum, horizontal grid lines with labels, a legend. Gaps (NaN)
// break the line.

const PAD = { left: 52, right: 18, top: 22, bottom: 20 };

// A "nice" upper bound (1, 2 or 5 times a power of ten) at or above v.
export function niceCeil(v) {
  if (!(v > 0) || !Number.isFinite(v)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v * (1 - 1e-9)) return m * p;
  return 10 * p;
}

export function formatNumber(v) {
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e6) return `${(v / 1e6).toFixed(1)}M`;
  if (a >= 1e3) return `${(v / 1e3).toFixed(1)}k`;
  if (a >= 10) return v.toFixed(0);
  if (a >= 1) return v.toFixed(1);
  if (a >= 0.01) return v.toFixed(2);
  return v.toExponential(0);
}

// series: [{label, color, points: [[timeMs, value], ...]}]; opts: {now, windowMs, yMax (fixed top),
// yCap (the most the automatic top may be)}.
export function drawPlot(canvas, series, { now, windowMs, yMax, yCap = Infinity } = {}) {
  const ctx = canvas.getContext('2d');
  const w = canvas.width;
  const h = canvas.height;
  const t0 = now - windowMs;
  const plotW = w - PAD.left - PAD.right;
  const plotH = h - PAD.top - PAD.bottom;
  let max = 0;
  for (const s of series) {
    for (const [t, v] of s.points) if (t >= t0 && Number.isFinite(v)) max = Math.max(max, v);
  }
  const top = yMax ?? Math.min(yCap, niceCeil(max));
  const x = (t) => PAD.left + ((t - t0) / windowMs) * plotW;
  const y = (v) => PAD.top + plotH - (Math.min(v, top) / top) * plotH;

  ctx.clearRect(0, 0, w, h);
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, w, h);
  ctx.font = '11px system-ui, sans-serif';
  ctx.lineWidth = 1;
  // Grid and y labels.
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  // Grid steps of 1, 2 or 5 times a power of ten: 2 * 10^k splits in 4, 1 and 5 * 10^k in 5.
  const mantissa = Math.round(top / 10 ** Math.floor(Math.log10(top)));
  const steps = mantissa === 2 ? 4 : 5;
  for (let i = 0; i <= steps; i++) {
    const v = (top * i) / steps;
    const yy = Math.round(y(v)) + 0.5;
    ctx.strokeStyle = i === 0 ? '#888' : '#e4e4e4';
    ctx.beginPath();
    ctx.moveTo(PAD.left, yy);
    ctx.lineTo(w - PAD.right, yy);
    ctx.stroke();
    ctx.fillStyle = '#555';
    ctx.fillText(formatNumber(v), PAD.left - 6, yy);
  }
  // x labels: minutes ago.
  ctx.textAlign = 'center';
  ctx.textBaseline = 'top';
  const minutes = Math.round(windowMs / 60000);
  for (let m = 0; m <= minutes; m++) {
    const xx = x(now - m * 60000);
    ctx.fillStyle = '#555';
    ctx.fillText(m === 0 ? 'now' : `-${m}m`, xx, h - PAD.bottom + 4);
  }
  // Lines.
  ctx.lineWidth = 1.75;
  for (const s of series) {
    ctx.strokeStyle = s.color;
    ctx.beginPath();
    let pen = false;
    for (const [t, v] of s.points) {
      if (t < t0 || !Number.isFinite(v)) {
        pen = false;
        continue;
      }
      if (pen) ctx.lineTo(x(t), y(v));
      else ctx.moveTo(x(t), y(v));
      pen = true;
    }
    ctx.stroke();
  }
  // Legend with the latest value of each series.
  ctx.textAlign = 'left';
  ctx.textBaseline = 'middle';
  let lx = PAD.left;
  for (const s of series) {
    const last = s.points.length ? s.points[s.points.length - 1][1] : NaN;
    const text = `${s.label} ${Number.isFinite(last) ? formatNumber(last) : '-'}`;
    ctx.fillStyle = s.color;
    ctx.fillRect(lx, 7, 10, 3);
    ctx.fillStyle = '#333';
    ctx.fillText(text, lx + 14, 9);
    lx += 24 + ctx.measureText(text).width;
  }
}
