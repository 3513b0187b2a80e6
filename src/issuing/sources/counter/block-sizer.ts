/**
 * Block sizes that follow the consumption rate: a block should last about `targetMs`. One that ran
 * out in under half that doubles the next size; one that lasted over twice that halves it; always
 * within [min, max].
 */
export interface BlockSizing {
  minBlock: number;
  maxBlock: number;
  initialBlock: number;
  targetBlockMs: number;
}

export class BlockSizer {
  #size: number;
  readonly #s: BlockSizing;

  constructor(s: BlockSizing) {
    this.#s = s;
    this.#size = Math.min(s.maxBlock, Math.max(s.minBlock, s.initialBlock));
  }

  get size(): number {
    return this.#size;
  }

  /** Called when a block of `size` numbers ran out after `lastedMs`. */
  blockUsed(lastedMs: number): void {
    if (lastedMs < this.#s.targetBlockMs / 2) this.#size = Math.min(this.#s.maxBlock, this.#size * 2);
    else if (lastedMs > this.#s.targetBlockMs * 2) this.#size = Math.max(this.#s.minBlock, Math.ceil(this.#size / 2));
  }
}

/** Numbers per second, as an exponentially weighted moving average over ~`halfLifeMs`. */
export class Rate {
  #perSecond = 0;
  #last: number;
  readonly #halfLifeMs: number;

  constructor(now: number, halfLifeMs = 30_000) {
    this.#last = now;
    this.#halfLifeMs = halfLifeMs;
  }

  add(n: number, now: number): void {
    const dt = Math.max(1, now - this.#last);
    const instant = (n * 1000) / dt;
    const w = 1 - 0.5 ** (dt / this.#halfLifeMs);
    this.#perSecond = this.#perSecond + w * (instant - this.#perSecond);
    this.#last = now;
  }

  get perSecond(): number {
    return this.#perSecond;
  }
}
