/**
 * The schema-registry seam: the parts of the Confluent Schema Registry REST API idd uses, spoken to
 * any compatible registry (Confluent, Apicurio's `/apis/ccompat/v7`, Karapace). Schemas are cached
 * by id: an id never changes its schema. Basic auth comes from the options or the URL's user-info
 * (taken out of the URL, which is then safe to print); https may trust a CA of its own.
 */
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { reveal } from "../config/secret.js";
import type { RegistrySecurity } from "../config/security.js";
import { oneLine, untrustedCertificate } from "../config/untrusted.js";
import { IddError } from "../core/errors.js";

const CONTENT_TYPE = "application/vnd.schemaregistry.v1+json";

export class RegistryClient {
  /** The URL without user-info: the only form that appears in messages. */
  readonly #url: URL;
  readonly #timeoutMs: number;
  readonly #authorization: string | undefined;
  readonly #ca: string | undefined;
  readonly #byId = new Map<number, string>();

  constructor(url: string, opts: { timeoutMs?: number; security?: RegistrySecurity } = {}) {
    const u = new URL(url.replace(/\/+$/, ""));
    const user = opts.security?.username ?? decodeURIComponent(u.username);
    const password = opts.security?.password !== undefined ? reveal(opts.security.password) : decodeURIComponent(u.password);
    u.username = "";
    u.password = "";
    this.#url = u;
    this.#timeoutMs = opts.timeoutMs ?? 5000;
    this.#authorization = user || password ? `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}` : undefined;
    this.#ca = opts.security?.ca;
  }

  /** Where the registry is, without credentials. */
  get url(): string {
    return this.#url.toString();
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
    const where = `${this.#url.pathname.replace(/\/+$/, "")}${path}`;
    const shown = `${method} ${this.#url.origin}${where}`;
    let res: { status: number; text: string };
    try {
      res = await this.#send(method, where, body);
    } catch (e) {
      if (untrustedCertificate(e))
        throw new IddError(
          "REGISTRY_TLS_FAILED",
          `${shown}: ${oneLine(e)}; set SCHEMA_REGISTRY_CA_FILE to the CA that signed the registry's certificate`,
          { cause: e },
        );
      throw new IddError("REGISTRY_UNAVAILABLE", `${shown}: ${(e as Error).message}`, { cause: e });
    }
    const { status, text } = res;
    if (status < 200 || status >= 300) {
      let detail = text.slice(0, 300);
      try {
        const j = JSON.parse(text) as { error_code?: number; message?: string };
        detail = `${j.error_code ?? status} ${j.message ?? ""}`.trim();
      } catch {
        /* not JSON */
      }
      if (status === 401 || status === 403)
        throw new IddError(
          "REGISTRY_AUTH_FAILED",
          `${shown}: HTTP ${status}: ${this.#authorization ? "the registry refused the credentials" : "the registry wants credentials and none were given"}`,
        );
      throw new IddError("REGISTRY_REJECTED", `${method} ${path}: HTTP ${status}: ${detail}`, { retriable: status >= 500 });
    }
    return JSON.parse(text) as unknown;
  }

  /** One HTTP exchange (node:http rather than fetch, which takes neither a CA of its own nor user-info URLs). */
  #send(method: string, path: string, body?: string): Promise<{ status: number; text: string }> {
    const u = this.#url;
    const headers: Record<string, string> = { "content-type": CONTENT_TYPE, accept: CONTENT_TYPE };
    if (this.#authorization) headers.authorization = this.#authorization;
    if (body !== undefined) headers["content-length"] = String(Buffer.byteLength(body));
    const options = {
      method,
      host: u.hostname.replace(/^\[|\]$/g, ""),
      port: u.port || undefined,
      path: `${path}${u.search}`,
      headers,
      signal: AbortSignal.timeout(this.#timeoutMs),
      ...(this.#ca && { ca: this.#ca }),
    };
    return new Promise((resolve, reject) => {
      const req = (u.protocol === "https:" ? httpsRequest : httpRequest)(options, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
        res.on("error", reject);
      });
      req.on("error", reject);
      req.end(body);
    });
  }
}
