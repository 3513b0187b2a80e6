/**
 * A counter's last sample windows (IDD_SAMPLE_MS each, closed by the allocator's sampler: the same
 * windows it appends to MongoDB's `samples`), for the rate its capacity forecast uses
 * (src/sequences/capacity.ts). Idle windows count, so the rate falls to 0 once nothing is issued;
 * the last FORECAST_WINDOWS are kept, so memory is bounded per counter.
 */

/** The sample windows a forecast's rate is measured over: a minute and a half at the default IDD_SAMPLE_MS. */
export const FORECAST_WINDOWS = 9;

export class SampleWindows {
  /** [ms, numbers issued], oldest first. */
  readonly #windows: [number, number][] = [];

  /** Keeps one closed window of `ms` in which `issued` numbers were issued. */
  close(ms: number, issued: number): void {
    this.#windows.push([ms, issued]);
    if (this.#windows.length > FORECAST_WINDOWS) this.#windows.shift();
  }

  /** Numbers a second over the kept windows; null before the first one closed. */
  get perSecond(): number | null {
    let ms = 0;
    let n = 0;
    for (const [w, k] of this.#windows) {
      ms += w;
      n += k;
    }
    return ms > 0 ? (n * 1000) / ms : null;
  }
}
