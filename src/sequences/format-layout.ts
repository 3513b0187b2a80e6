/**
 * How a format's values are read back (format.ts's header states the rule): per part, where its text
 * ends, or why that cannot be known (an ambiguous template) under one overflow policy.
 */

import { type FormatPart, kindOf, type OverflowPolicy, type Shape, show } from "./format-parts.js";

/**
 * Where readValue finds a part's text: a fixed width; or, for a variable-width part, everything up to
 * a fixed suffix of `suffix` characters, or up to the first character that `chars` does not match, less
 * `offset` (the width of the fixed-width parts between the part and that character).
 */
type Extent = { readonly width: number } | { readonly suffix: number } | { readonly chars: RegExp; readonly offset: number };
export interface Step {
  readonly part: FormatPart;
  readonly extent: Extent;
  /** The most characters it prints. */
  readonly max: number;
}
/** How to read a template's values under one policy, or why they cannot be read ([position, problem]). */
export interface Layout {
  readonly steps: readonly Step[];
  readonly problems: readonly (readonly [number, string])[];
}

function ambiguity(p: FormatPart, prints: string, next: FormatPart, overflow: OverflowPolicy): string {
  const fixed = overflow === "refuse" ? "literals, date parts, {seq:N}, {check:…}" : "literals, date parts, {check:…}; {seq:N} widens";
  return (
    `${show(p.source)} at position ${p.at}: ambiguous: it prints ${prints}, and nothing between it and ` +
    `${show(next.source)} at position ${next.at} shows where it ends; put a character it never prints between them ` +
    `(such as "-"), or only fixed-width parts after it (${fixed})`
  );
}

/** The rule of the header, applied: one step per part, one problem per variable-width part that breaks it. */
export function layout(parts: readonly FormatPart[], overflow: OverflowPolicy): Layout {
  const shapes = parts.map((p) => kindOf(p).shape(p, overflow));
  const steps: Step[] = [];
  const problems: [number, string][] = [];
  parts.forEach((part, i) => {
    const shape = shapes[i] as Shape;
    const max = kindOf(part).maxLength(part, overflow);
    if (shape.width !== null) {
      steps.push({ part, extent: { width: shape.width }, max });
      return;
    }
    // What the part and the fixed-width placeholders after it may print: the first other character ends the scan.
    const classes = [shape.chars];
    const printable = (ch: string) => classes.some((c) => c.test(ch));
    let offset = 0;
    for (let j = i + 1; j < parts.length; j++) {
      const next = parts[j] as FormatPart;
      const after = shapes[j] as Shape;
      if (after.width === null) {
        problems.push([part.at, ambiguity(part, shape.prints, next, overflow)]);
        return;
      }
      if (next.kind === "literal") {
        for (let k = 0; k < next.text.length; k++)
          if (!printable(next.text.charAt(k))) {
            const chars = new RegExp([...new Set(classes.map((c) => c.source))].join("|"));
            steps.push({ part, extent: { chars, offset: offset + k }, max });
            return;
          }
      } else if (after.chars) classes.push(after.chars);
      offset += after.width;
    }
    steps.push({ part, extent: { suffix: offset }, max });
  });
  return { steps, problems };
}
