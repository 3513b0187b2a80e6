/**
 * The local stack's TLS material, made once per stack folder with openssl: a CA, and a certificate
 * for 127.0.0.1 signed by it that Kafka's SASL_SSL listener serves (one PEM file, key and
 * certificate, as Kafka's PEM keystore reads it). idd trusts it through KAFKA_SSL_CA_FILE. The keys
 * never leave the stack folder (git-ignored, mode 0600).
 */
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { StackLayout } from "./paths.js";

export interface StackTls {
  /** The CA certificate clients check the listener against. */
  caFile: string;
  /** The listener's private key and certificate, PEM. */
  keystoreFile: string;
}

export function stackTls(l: StackLayout): StackTls {
  const dir = join(l.dir, "tls");
  const out = { caFile: join(dir, "ca.pem"), keystoreFile: join(dir, "kafka.pem") };
  if (existsSync(out.caFile) && existsSync(out.keystoreFile)) return out;
  const work = `${dir}.tmp`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true, mode: 0o700 });
  const openssl = (...args: string[]) => {
    const r = spawnSync("openssl", args, { cwd: work, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`openssl ${args[0]} failed: ${(r.stderr || r.error?.message || "").trim().split("\n").pop()}`);
  };
  openssl(
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    "ca.key",
    "-out",
    "ca.pem",
    "-days",
    "3650",
    "-subj",
    "/CN=idd local stack CA",
  );
  openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "kafka.key", "-out", "kafka.csr", "-subj", "/CN=127.0.0.1");
  writeFileSync(join(work, "san.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  openssl(
    "x509",
    "-req",
    "-in",
    "kafka.csr",
    "-CA",
    "ca.pem",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    "kafka.crt",
    "-days",
    "3650",
    "-extfile",
    "san.ext",
  );
  writeFileSync(join(work, "kafka.pem"), readFileSync(join(work, "kafka.key"), "utf8") + readFileSync(join(work, "kafka.crt"), "utf8"), {
    mode: 0o600,
  });
  for (const f of ["ca.key", "kafka.key"]) chmodSync(join(work, f), 0o600);
  rmSync(dir, { recursive: true, force: true });
  renameSync(work, dir);
  return out;
}
