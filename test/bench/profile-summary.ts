/**
 * Where processes spent their CPU, from the .cpuprofile files test/bench/cpu-profile.mjs wrote:
 * busy time by package / source file, the top functions by self time, and idd's own functions
 * (src/) by inclusive time (themselves and what they called). Percentages are of busy time (all
 * samples but idle), summed over the files given.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

function area(url: string, fn: string): string {
  if (fn === "(idle)" || fn === "(garbage collector)" || fn === "(program)" || fn === "(root)") return fn;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return pkg[1] as string;
  const src = /\/(src|test|stack)\/(.+)$/.exec(url);
  if (src) return `${src[1]}/${src[2]}`;
  if (url.startsWith("node:")) return url.replace(/^node:internal\/([^/]+).*/, "node:$1");
  return url === "" ? "(native / V8 builtins)" : url;
}

const where = (n: ProfileNode) => {
  const { url, functionName, lineNumber } = n.callFrame;
  const file = url.includes("/node_modules/") ? url.replace(/^.*\/node_modules\//, "") : url.replace(/^.*\/(src|test|stack)\//, "$1/");
  return `${functionName || "(anonymous)"} ${file ? `${file}:${lineNumber + 1}` : ""}`.trim();
};

export function summarizeProfiles(dir: string, prefix: string, say: (line: string) => void, top = 15): void {
  const files = readdirSync(dir).filter((f) => f.startsWith(prefix) && f.endsWith(".cpuprofile"));
  if (files.length === 0) {
    say(`  no profiles ${prefix}* in ${dir}`);
    return;
  }
  const byArea = new Map<string, number>();
  const selfByFn = new Map<string, number>();
  const inclusiveSrc = new Map<string, number>();
  let busy = 0;
  let idle = 0;
  for (const f of files) {
    const p = JSON.parse(readFileSync(join(dir, f), "utf8")) as Profile;
    const nodes = new Map(p.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const self = new Map<number, number>();
    p.samples.forEach((id, i) => {
      self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0) / 1000);
    });
    for (const [id, ms] of self) {
      const n = nodes.get(id) as ProfileNode;
      const a = area(n.callFrame.url, n.callFrame.functionName);
      if (a === "(idle)") {
        idle += ms;
        continue;
      }
      busy += ms;
      byArea.set(a, (byArea.get(a) ?? 0) + ms);
      selfByFn.set(where(n), (selfByFn.get(where(n)) ?? 0) + ms);
      // Inclusive time of src/ functions: each distinct src/ frame on the stack once.
      const counted = new Set<string>();
      for (let x: number | undefined = id; x !== undefined; x = parent.get(x)) {
        const fn = nodes.get(x) as ProfileNode;
        if (!/\/src\//.test(fn.callFrame.url) || fn.callFrame.url.includes("/node_modules/")) continue;
        const k = where(fn);
        if (counted.has(k)) continue;
        counted.add(k);
        inclusiveSrc.set(k, (inclusiveSrc.get(k) ?? 0) + ms);
      }
    }
  }
  const pct = (ms: number) => `${((ms / busy) * 100).toFixed(1).padStart(5)}%`;
  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, top);
  say(
    `  ${files.length} profiles ${prefix}*: busy ${(busy / 1000).toFixed(1)} s, idle ${(idle / 1000).toFixed(1)} s (sampled; the profiler adds overhead)`,
  );
  say("  busy time by package / file:");
  for (const [a, ms] of sorted(byArea)) say(`    ${pct(ms)}  ${a}`);
  say("  top functions by self time:");
  for (const [fn, ms] of sorted(selfByFn)) say(`    ${pct(ms)}  ${fn}`);
  if (inclusiveSrc.size > 0) {
    say("  src/ functions by inclusive time:");
    for (const [fn, ms] of sorted(inclusiveSrc)) say(`    ${pct(ms)}  ${fn}`);
  }
}

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children?: HeapNode[];
}

/**
 * What processes allocated, from the .heapprofile files test/bench/cpu-profile.mjs wrote (sampled,
 * collected objects included): the total, the top functions by bytes allocated themselves, and per
 * src/ function the bytes allocated by it or by what it called outside src/ (the nearest src/ frame).
 */
export function summarizeAllocations(dir: string, prefix: string, say: (line: string) => void, top = 12): void {
  const files = readdirSync(dir).filter((f) => f.startsWith(prefix) && f.endsWith(".heapprofile"));
  if (files.length === 0) return;
  const selfByFn = new Map<string, number>();
  const bySrc = new Map<string, number>();
  let total = 0;
  const isSrc = (n: HeapNode) => /\/src\//.test(n.callFrame.url) && !n.callFrame.url.includes("/node_modules/");
  const walk = (n: HeapNode, nearestSrc: string) => {
    const here = isSrc(n) ? where(n as unknown as ProfileNode) : nearestSrc;
    if (n.selfSize > 0) {
      total += n.selfSize;
      const k = where(n as unknown as ProfileNode);
      selfByFn.set(k, (selfByFn.get(k) ?? 0) + n.selfSize);
      bySrc.set(here, (bySrc.get(here) ?? 0) + n.selfSize);
    }
    for (const c of n.children ?? []) walk(c, here);
  };
  for (const f of files) walk((JSON.parse(readFileSync(join(dir, f), "utf8")) as { head: HeapNode }).head, "(outside src/)");
  const pct = (b: number) => `${((b / total) * 100).toFixed(1).padStart(5)}%`;
  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, top);
  say(`  allocations (${files.length} profiles, sampled every 64 KiB, collected objects included): ${(total / 1e6).toFixed(0)} MB`);
  say("  top functions by bytes allocated:");
  for (const [fn, b] of sorted(selfByFn)) say(`    ${pct(b)}  ${fn}`);
  say("  by the nearest src/ function on the stack:");
  for (const [fn, b] of sorted(bySrc)) say(`    ${pct(b)}  ${fn}`);
}
