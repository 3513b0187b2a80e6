/**
 * The open loop's librdkafka generator: test/bench/generator-librdkafka.py (confluent-kafka, in the
 * examples' Python venv), a client from outside the project, driven over stdin/stdout. It runs
 * the same plans as the kafkajs LoadGenerator (bursts, paced and jump runs; not backlogs, which
 * need the target held while publishing) and returns the same RunResult, on either partitioner:
 * `murmur2` (Kafka's Java partitioner: requests land home) or `crc32` (librdkafka's default, as
 * Python, Go, .NET and C clients publish: most requests are forwarded home).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface, type Interface } from "node:readline";
import { ServedAdmin } from "../../stack/kafka-admin.js";
import type { Plan, RunResult } from "./load-generator.js";

const SCRIPT = join(import.meta.dirname, "generator-librdkafka.py");

export interface RdkGeneratorOptions {
  python: string;
  brokers: string[];
  sequences: string[];
  partitioner: "murmur2" | "crc32";
  idleTimeoutMs?: number;
}

/** The generator's answer to a run: RunResult's counts, with its latencies in the file named. */
type Answer = Omit<RunResult, "latencies" | "window" | "firstError"> & {
  error?: string;
  windowFrom: number;
  firstError: string | null;
  stray: number;
};

export class RdkGenerator {
  readonly replyTopic = `bench.replies.rdk.${randomBytes(4).toString("hex")}`;
  /** Replies that belonged to no current run. */
  stray = 0;
  readonly #o: RdkGeneratorOptions;
  readonly #admin: ServedAdmin;
  readonly #dir = mkdtempSync(join(tmpdir(), "idd-rdk-gen-"));
  #child!: ChildProcess;
  #lines!: Interface;
  readonly #waiting: ((line: string) => void)[] = [];

  private constructor(o: RdkGeneratorOptions) {
    this.#o = o;
    this.#admin = new ServedAdmin(o.brokers, "bench-generator-rdk");
  }

  static async start(o: RdkGeneratorOptions): Promise<RdkGenerator> {
    const g = new RdkGenerator(o);
    await g.#start();
    return g;
  }

  /** The generator's process, for its CPU. */
  get pid(): number {
    return this.#child.pid as number;
  }

  async #start(): Promise<void> {
    await this.#admin.createTopics([{ topic: this.replyTopic, partitions: 1 }]);
    this.#child = spawn(this.#o.python, [SCRIPT], {
      env: {
        ...process.env,
        KAFKA_BROKERS: this.#o.brokers.join(","),
        GEN_REPLY_TOPIC: this.replyTopic,
        GEN_PARTITIONER: this.#o.partitioner === "murmur2" ? "murmur2_random" : "consistent_random",
      },
      stdio: ["pipe", "pipe", "inherit"],
    });
    this.#lines = createInterface({ input: this.#child.stdout as NodeJS.ReadableStream });
    this.#lines.on("line", (line) => this.#waiting.shift()?.(line));
    const exited = new Promise<never>((_, reject) =>
      this.#child.once("exit", (code) => reject(new Error(`the librdkafka generator exited (${code}) before it was ready`))),
    );
    await Promise.race([this.#next(), exited]);
  }

  #next(): Promise<string> {
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  async createTopic(topic: string, partitions: number): Promise<void> {
    await this.#admin.createTopics([{ topic, partitions }]);
  }

  async deleteTopics(topics: string[]): Promise<void> {
    await this.#admin.deleteTopics(topics);
  }

  /** Runs one plan against `topic` and waits for every reply (or the idle timeout). */
  async run(topic: string, plan: Plan): Promise<RunResult> {
    if (plan.kind === "backlog") throw new Error("the librdkafka generator runs no backlogs: use --generator kafkajs");
    const latencies = join(this.#dir, "latencies.f64");
    const { hold: _h, release: _r, sequences, ...wire } = plan as Plan & { hold?: unknown; release?: unknown };
    const answer = this.#next();
    (this.#child.stdin as NodeJS.WritableStream).write(
      `${JSON.stringify({
        cmd: "run",
        topic,
        plan: wire,
        sequences: sequences ?? this.#o.sequences,
        latencies,
        idleTimeoutMs: this.#o.idleTimeoutMs ?? 30_000,
      })}\n`,
    );
    const a = JSON.parse(await answer) as Answer;
    if (a.error) throw new Error(`the librdkafka generator failed: ${a.error}`);
    this.stray = a.stray;
    const bytes = readFileSync(latencies);
    const all = new Float64Array(bytes.buffer, bytes.byteOffset, bytes.length / 8);
    const answered = (from: number) =>
      all
        .slice(from)
        .filter((x) => !Number.isNaN(x))
        .sort();
    const r: RunResult = {
      requests: a.requests,
      answered: a.answered,
      duplicates: a.duplicates,
      errors: a.errors,
      missing: a.missing,
      numbers: a.numbers,
      elapsedMs: a.elapsedMs,
      publishMs: a.publishMs,
      lagMs: a.lagMs,
      latencies: answered(0),
      ...(a.windowFrom > 0 && { window: answered(a.windowFrom) }),
    };
    if (a.firstError !== null) r.firstError = a.firstError;
    return r;
  }

  async close(): Promise<void> {
    (this.#child.stdin as NodeJS.WritableStream).write(`${JSON.stringify({ cmd: "stop" })}\n`);
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        this.#child.kill("SIGKILL");
        resolve();
      }, 10_000);
      this.#child.once("exit", () => {
        clearTimeout(t);
        resolve();
      });
    });
    this.#lines.close();
    rmSync(this.#dir, { recursive: true, force: true });
    await this.#admin.deleteTopics([this.replyTopic]).catch(() => {});
    await this.#admin.close().catch(() => {});
  }
}
