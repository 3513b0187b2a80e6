/** Command-line flags of the benchmarks: `--name value`, `--name a,b,c`, or `--name` alone. */
const argv = process.argv.slice(2);

function raw(name: string): string | undefined {
  const i = argv.indexOf(`--${name}`);
  if (i < 0) return undefined;
  const v = argv[i + 1];
  return v === undefined || v.startsWith("--") ? "" : v;
}

export const has = (name: string): boolean => argv.includes(`--${name}`);

export function str(name: string): string | undefined {
  const v = raw(name);
  if (v === "") throw new Error(`--${name} needs a value`);
  return v;
}

export function num(name: string, def: number): number {
  const v = raw(name);
  if (v === undefined) return def;
  const n = Number(v.replaceAll("_", ""));
  if (v === "" || !Number.isFinite(n)) throw new Error(`--${name} needs a number, got "${v}"`);
  return n;
}

export function nums(name: string, def: number[]): number[] {
  const v = raw(name);
  if (v === undefined) return def;
  if (v === "" || v === "none") return [];
  return v.split(",").map((x) => {
    const n = Number(x.trim().replaceAll("_", ""));
    if (!Number.isFinite(n)) throw new Error(`--${name} needs numbers separated by commas, got "${v}"`);
    return n;
  });
}

export function words(name: string, def: string[], allowed: readonly string[]): string[] {
  const v = raw(name);
  if (v === undefined) return def;
  const out = v.split(",").map((x) => x.trim());
  const bad = out.filter((x) => !allowed.includes(x));
  if (bad.length > 0 || out.length === 0) throw new Error(`--${name}: unknown ${bad.join(", ")}; choose from ${allowed.join(", ")}`);
  return out;
}

/** The flags given that are not in `known` (to fail on typos instead of silently running defaults). */
export function unknownFlags(known: readonly string[]): string[] {
  return argv.filter((a) => a.startsWith("--") && !known.includes(a.slice(2)));
}
