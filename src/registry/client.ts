/**
 * The schema-registry seam: the parts of the Confluent Schema Registry REST API idd uses, spoken to
 * any compatible registry (Confluent, Apicurio's `/apis/ccompat/v7`, Karapace). Schemas are cached
 * by id: an id never changes its schema.
 */
import { IddError } from "../errors.js";

const CONTENT_TYPE = "application/vnd.schemaregistry.v1+json";

export class RegistryClient {
  readonly #url: string;
  readonly #timeoutMs: number;
  readonly #byId = new Map<number, string>();

  constructor(url: string, opts: { timeoutMs?: number } = {}) {
    this.#url = url.replace(/\/+$/, "");
    this.#timeoutMs = opts.timeoutMs ?? 5000;
  }

  /** Registers `schema` under `subject` (a no-op when already registered) and returns its global id. */
  async register(subject: string, schema: object | string): Promise<number> {
    const text = typeof schema === "string" ? schema : JSON.stringify(schema);
    const body = JSON.stringify({ schema: text, schemaType: "AVRO" });
    const r = (await this.#call("POST", `/subjects/${encodeURIComponent(subject)}/versions`, body)) as { id?: unknown };
    if (typeof r.id !== "number") throw new IddError("REGISTRY_REJECTED", `register ${subject}: no id in the answer`);
    this.#byId.set(r.id, text);
    return r.id;
  }

  /** The schema text registered under `id`. */
  async schemaById(id: number): Promise<string> {
    const cached = this.#byId.get(id);
    if (cached !== undefined) return cached;
    const r = (await this.#call("GET", `/schemas/ids/${id}`)) as { schema?: unknown };
    if (typeof r.schema !== "string") throw new IddError("REGISTRY_REJECTED", `schema ${id}: no schema in the answer`);
    this.#byId.set(id, r.schema);
    return r.schema;
  }

  async #call(method: string, path: string, body?: string): Promise<unknown> {
    let res: Response;
    try {
      res = await fetch(`${this.#url}${path}`, {
        method,
        body,
        headers: { "content-type": CONTENT_TYPE, accept: CONTENT_TYPE },
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (e) {
      throw new IddError("REGISTRY_UNAVAILABLE", `${method} ${this.#url}${path}: ${(e as Error).message}`, { cause: e, retriable: true });
    }
    const text = await res.text();
    if (!res.ok) {
      let detail = text.slice(0, 300);
      try {
        const j = JSON.parse(text) as { error_code?: number; message?: string };
        detail = `${j.error_code ?? res.status} ${j.message ?? ""}`.trim();
      } catch {
        /* not JSON */
      }
      throw new IddError("REGISTRY_REJECTED", `${method} ${path}: HTTP ${res.status}: ${detail}`, { retriable: res.status >= 500 });
    }
    return JSON.parse(text) as unknown;
  }
}
