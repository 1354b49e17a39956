import {
  BarController,
  BarElement,
  CategoryScale,
  Chart as ChartJs,
  Legend,
  LinearScale,
  Tooltip,
} from 'chart.js';
import { type ReactNode, useEffect, useId, useRef } from 'react';
import type { Series } from '../logic/evidence-view';

// Only the pieces a grouped bar chart needs, so the chart chunk stays small.
ChartJs.register(BarController, BarElement, CategoryScale, LinearScale, Legend, Tooltip);

const BASELINE = '#8a94a8';
const CANDIDATE = '#2456c4';

/**
 * Baseline against candidate as grouped bars (chart.js on a canvas), with the same numbers as a table
 * for screen readers and for reading exact values. Loaded with the pages that draw charts, never with
 * the first page.
 */
export function Chart({ series, format }: { series: Series; format?: (v: number) => string }): ReactNode {
  const canvas = useRef<HTMLCanvasElement>(null);
  const id = useId();
  const show = format ?? ((v: number) => String(v));

  useEffect(() => {
    if (!canvas.current) return;
    const chart = new ChartJs(canvas.current, {
      type: 'bar',
      data: {
        labels: series.labels,
        datasets: [
          { label: 'baseline', data: series.baseline, backgroundColor: BASELINE },
          { label: 'candidate', data: series.candidate, backgroundColor: CANDIDATE },
        ],
      },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        plugins: { legend: { position: 'bottom' } },
        scales: { y: { beginAtZero: true } },
      },
    });
    return () => chart.destroy();
  }, [series]);

  return (
    <figure className="chart" aria-labelledby={`${id}-title`}>
      <figcaption id={`${id}-title`}>{series.title}</figcaption>
      <div className="chart-canvas">
        <canvas ref={canvas} role="img" aria-label={`${series.title}: baseline and candidate`} />
      </div>
      <details>
        <summary>Values</summary>
        <table aria-label={series.title}>
          <thead>
            <tr>
              <th scope="col"> </th>
              <th scope="col">baseline</th>
              <th scope="col">candidate</th>
            </tr>
          </thead>
          <tbody>
            {series.labels.map((label, i) => (
              <tr key={label}>
                <th scope="row">{label}</th>
                <td>{series.baseline[i] === null ? '–' : show(series.baseline[i] as number)}</td>
                <td>{series.candidate[i] === null ? '–' : show(series.candidate[i] as number)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}
