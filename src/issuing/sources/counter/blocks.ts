/**
 * A counter's unissued blocks, held in memory in claim order: numbers leave front first, so they
 * leave strictly increasing (each block lies above the one before it).
 */
import type { Range } from "../../../core/range.js";

export class Blocks {
  readonly #ranges: Range[] = [];
  /** Numbers in #ranges, kept as they change (takes read it twice). */
  #available = 0n;

  get available(): bigint {
    return this.#available;
  }

  /** A block just claimed: it lies above every block held. */
  push(block: Range): void {
    this.#ranges.push({ first: block.first, last: block.last });
    this.#available += block.last - block.first + 1n;
  }

  /**
   * Takes `want` numbers (at most `available`) as ranges in increasing order, adjacent ranges
   * merged; `usedUp` is called for each block the take empties.
   */
  take(want: bigint, usedUp: () => void): Range[] {
    const out: Range[] = [];
    let left = want;
    while (left > 0n) {
      const b = this.#ranges[0] as Range;
      const size = b.last - b.first + 1n;
      const n = size < left ? size : left;
      const r = { first: b.first, last: b.first + n - 1n };
      const prev = out.at(-1);
      if (prev && prev.last + 1n === r.first) prev.last = r.last;
      else out.push(r);
      left -= n;
      if (n === size) {
        this.#ranges.shift();
        usedUp();
      } else {
        b.first += n;
      }
    }
    this.#available -= want;
    return out;
  }

  /** Removes every block held, and returns them. */
  clear(): Range[] {
    this.#available = 0n;
    return this.#ranges.splice(0);
  }
}
