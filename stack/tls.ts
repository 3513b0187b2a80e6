/**
 * The local stack's TLS material, made once per stack folder with openssl: a CA; a server
 * certificate for 127.0.0.1 signed by it, served by Kafka's SASL_SSL listener (one PEM file, key and
 * certificate, as Kafka's PEM keystore reads it), the registry's https port and the login FerretDB;
 * and a client certificate (CN idd) that Kafka's listener requires (mutual TLS). idd trusts the CA
 * through KAFKA_SSL_CA_FILE, SCHEMA_REGISTRY_CA_FILE and MongoDB's tlsCAFile. The keys never leave
 * the stack folder (git-ignored, mode 0600).
 */
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { StackLayout } from "./paths.js";

export interface StackTls {
  /** The CA certificate clients and servers check the others against. */
  caFile: string;
  /** The servers' certificate and key (127.0.0.1), and both in one PEM file for Kafka. */
  serverCertFile: string;
  serverKeyFile: string;
  kafkaKeystoreFile: string;
  /** The client certificate and key idd presents to Kafka. */
  clientCertFile: string;
  clientKeyFile: string;
}

export function stackTls(l: StackLayout): StackTls {
  const dir = join(l.dir, "tls");
  const out: StackTls = {
    caFile: join(dir, "ca.pem"),
    serverCertFile: join(dir, "server.crt"),
    serverKeyFile: join(dir, "server.key"),
    kafkaKeystoreFile: join(dir, "kafka.pem"),
    clientCertFile: join(dir, "client.crt"),
    clientKeyFile: join(dir, "client.key"),
  };
  if (Object.values(out).every((f) => existsSync(f))) return out;
  const work = `${dir}.tmp`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true, mode: 0o700 });
  const openssl = (...args: string[]) => {
    const r = spawnSync("openssl", args, { cwd: work, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`openssl ${args[0]} failed: ${(r.stderr || r.error?.message || "").trim().split("\n").pop()}`);
  };
  const days = ["-days", "3650"];
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
    ...days,
    "-subj",
    "/CN=idd local stack CA",
  );
  const signed = (name: string, subject: string, ext: string) => {
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", subject);
    writeFileSync(join(work, `${name}.ext`), `${ext}\n`);
    openssl(
      "x509",
      "-req",
      "-in",
      `${name}.csr`,
      "-CA",
      "ca.pem",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-out",
      `${name}.crt`,
      ...days,
      "-extfile",
      `${name}.ext`,
    );
    chmodSync(join(work, `${name}.key`), 0o600);
  };
  signed("server", "/CN=127.0.0.1", "subjectAltName=IP:127.0.0.1,DNS:localhost");
  signed("client", `/CN=idd`, "extendedKeyUsage=clientAuth");
  writeFileSync(join(work, "kafka.pem"), readFileSync(join(work, "server.key"), "utf8") + readFileSync(join(work, "server.crt"), "utf8"), {
    mode: 0o600,
  });
  chmodSync(join(work, "ca.key"), 0o600);
  rmSync(dir, { recursive: true, force: true });
  renameSync(work, dir);
  return out;
}
