// A bar chart (uPlot on a canvas) with a data table beside it for screen readers and keyboard users.
import { useEffect, useRef } from '../vendor/hooks.js';
import uPlot from '../vendor/uplot.js';
import { html } from './html.js';

const height = 220;
const axisColour = '#4b5563';
const gridColour = '#e5e7eb';

/** A label shortened with an ellipsis to roughly fit `pixels` (the full text is in the legend and the table). */
function fit(label, pixels) {
  const room = Math.max(4, Math.floor(pixels / 7.5));
  return label.length <= room ? label : `${label.slice(0, room - 1)}…`;
}

/**
 * `summary` is what the legend shows away from the bars: `total` for figures that add up (cost,
 * requests), `max` for those that do not (percentiles, rates).
 */
export function BarChart({ title, caption, labels, values, format, axisFormat = format, colour, categoryName, summary = 'total' }) {
  const box = useRef(null);
  useEffect(() => {
    const element = box.current;
    const width = () => Math.max(240, element.clientWidth);
    const xs = labels.map((_, index) => index);
    const overall = summary === 'max' ? Math.max(0, ...values.map((value) => value ?? 0)) : values.reduce((sum, value) => sum + (value ?? 0), 0);
    const overallName = summary === 'max' ? 'highest' : 'all';
    // Category labels are never dropped or cut short: when they do not fit side by side they slant.
    const longest = Math.max(0, ...labels.map((label) => label.length));
    // Categories (models, keys: at most a dozen) all get a label; a long run of days gets every n-th.
    const everyLabel = labels.length <= 12;
    const slanted = longest * 7 > (width() - 80) / Math.max(1, labels.length);
    // Fewer labels than bars on narrow charts, so that they never overlap.
    const step = () => Math.max(1, Math.ceil(labels.length / Math.max(1, Math.floor(width() / 90))));
    const plot = new uPlot({
      width: width(),
      height,
      legend: { show: true, live: true },
      // Room on the right for the last slanted label, which would otherwise run off the canvas.
      padding: [null, everyLabel && slanted ? 48 : null, null, null],
      cursor: { y: false, points: { show: false }, drag: { x: false, y: false, setScale: false } },
      select: { show: false },
      scales: {
        x: { time: false, range: () => [-0.5, labels.length - 0.5] },
        y: { range: (_plot, _min, max) => [0, max > 0 ? max * 1.12 : 1] },
      },
      axes: [
        everyLabel && slanted
          ? { stroke: axisColour, grid: { show: false }, ticks: { show: false }, rotate: -30, size: Math.min(120, 24 + Math.min(longest, 28) * 5), splits: () => xs, values: (_plot, splits) => splits.map((index) => fit(labels[index] ?? '', 28 * 7.5)) }
          : { stroke: axisColour, grid: { show: false }, ticks: { show: false }, splits: () => (everyLabel ? xs : xs.filter((index) => index % step() === 0)), values: (_plot, splits) => splits.map((index) => fit(labels[index] ?? '', (width() - 80) / splits.length)) },
        { stroke: axisColour, grid: { stroke: gridColour, width: 1 }, ticks: { show: false }, size: 72, values: (_plot, splits) => splits.map(axisFormat) },
      ],
      series: [
        // Away from the bars the legend shows the whole range ("all" and the total), never a bare dash.
        { label: categoryName, value: (_plot, index) => (index === null || index === undefined ? overallName : labels[Math.round(index)] ?? overallName) },
        { label: title, fill: colour, stroke: colour, width: 0, points: { show: false }, paths: uPlot.paths.bars({ size: [0.72, 56] }), value: (_plot, value) => format(value === null || value === undefined ? overall : value) },
      ],
    }, [xs, values], element);
    const observer = new ResizeObserver(() => plot.setSize({ width: width(), height }));
    observer.observe(element);
    return () => {
      observer.disconnect();
      plot.destroy();
    };
  }, [labels, values]);

  return html`
    <figure class="chart card">
      <figcaption><h3>${caption}</h3></figcaption>
      <div class="plot" ref=${box} aria-hidden="true"></div>
      <details>
        <summary>Show the numbers</summary>
        <table class="compact">
          <thead><tr><th scope="col">${categoryName}</th><th scope="col" class="num">${title}</th></tr></thead>
          <tbody>${labels.map((label, index) => html`<tr key=${label}><th scope="row">${label}</th><td class="num">${format(values[index])}</td></tr>`)}</tbody>
        </table>
      </details>
    </figure>`;
}
