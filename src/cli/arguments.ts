/** Option value parsers shared by several commands. */
import { InvalidArgumentError } from "commander";

/** A whole number ≥ 1 (`--count`, `--timeout`, `--settle-ms`). */
export const positive = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError("must be a positive integer");
  return n;
};
