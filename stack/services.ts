/** How each stack service is started and how we know it is ready (Kafka: stack/kafka.ts; the cluster profile: stack/cluster.ts). */
import { mkdirSync } from "node:fs";
import { MongoClient } from "mongodb";
import { CLUSTER_SPECS } from "./cluster.js";
import { apicurioJar, ferretBin, javaBin } from "./install.js";
import { kafka } from "./kafka.js";
import { dataDir, type ServiceName, type StackLayout } from "./paths.js";
import { redisServer } from "./redis.js";
import { STACK_USER, stackSecrets } from "./secrets.js";
import type { ServiceSpec } from "./service-spec.js";
import { stackTls } from "./tls.js";

export interface StackEnv {
  KAFKA_BROKERS: string;
  REDIS_URL: string;
  MONGODB_URL: string;
  SCHEMA_REGISTRY_URL: string;
}

export function stackEnv(l: StackLayout): StackEnv {
  return {
    KAFKA_BROKERS: `127.0.0.1:${l.ports.kafka}`,
    REDIS_URL: `redis://127.0.0.1:${l.ports.redis}`,
    MONGODB_URL: `mongodb://127.0.0.1:${l.ports.mongodb}/idd`,
    // The registry wants basic auth (stack/secrets.ts): the URL carries it, as a user's may.
    SCHEMA_REGISTRY_URL: `http://${STACK_USER}:${stackSecrets(l).registryPassword}@127.0.0.1:${l.ports.registry}/apis/ccompat/v7`,
  };
}

function javaOrThrow(): string {
  const java = javaBin();
  if (!java) throw new Error("java not found");
  return java;
}

const redis = redisServer("redis", (l) => l.ports.redis);
const redisAuth = redisServer("redis-auth", (l) => l.ports.redisAuth, { password: (l) => stackSecrets(l).redisPassword });

/**
 * A FerretDB on SQLite. The `mongodb-auth` one wants a login: FerretDB's new authentication, with
 * the user `idd` created in database `idd` at its first start (so URLs need `authSource=idd`).
 */
function ferretDb(name: "mongodb" | "mongodb-auth", port: (l: StackLayout) => number, password?: (l: StackLayout) => string): ServiceSpec {
  return {
    ports: (l) => [port(l)],
    async prepare(l) {
      const dir = dataDir(l, name);
      mkdirSync(dir, { recursive: true });
      // The login FerretDB also speaks only TLS, with the stack's server certificate.
      const listen = password
        ? [
            "--listen-addr=",
            `--listen-tls=127.0.0.1:${port(l)}`,
            `--listen-tls-cert-file=${stackTls(l).serverCertFile}`,
            `--listen-tls-key-file=${stackTls(l).serverKeyFile}`,
            "--test-enable-new-auth",
            "--setup-database=idd",
            `--setup-username=${STACK_USER}`,
            `--setup-password=${password(l)}`,
          ]
        : [`--listen-addr=127.0.0.1:${port(l)}`];
      return {
        cmd: ferretBin(l),
        cwd: dir,
        args: [
          "--handler=sqlite",
          `--sqlite-url=file:${dir}/`,
          `--state-dir=${dir}`,
          ...listen,
          "--debug-addr=-",
          "--telemetry=disable",
          "--log-level=warn",
        ],
      };
    },
    async ready(l) {
      const login = password ? `${STACK_USER}:${encodeURIComponent(password(l))}@` : "";
      const query = password ? `?authSource=idd&tls=true&tlsCAFile=${encodeURIComponent(stackTls(l).caFile)}` : "";
      const client = new MongoClient(`mongodb://${login}127.0.0.1:${port(l)}/${query}`, {
        serverSelectionTimeoutMS: 1000,
        connectTimeoutMS: 1000,
      });
      try {
        await client.db("admin").command({ ping: 1 });
        return true;
      } catch {
        return false;
      } finally {
        await client.close().catch(() => {});
      }
    },
  };
}

const mongodb = ferretDb("mongodb", (l) => l.ports.mongodb);
const mongodbAuth = ferretDb(
  "mongodb-auth",
  (l) => l.ports.mongodbAuth,
  (l) => stackSecrets(l).mongodbPassword,
);

const registry: ServiceSpec = {
  ports: (l) => [l.ports.registry, l.ports.registryTls],
  async prepare(l) {
    const dir = dataDir(l, "registry");
    mkdirSync(dir, { recursive: true });
    const tls = stackTls(l);
    return {
      cmd: javaOrThrow(),
      cwd: dir,
      // In-memory storage (H2, Apicurio's default): schemas are registered again by idd at start-up.
      args: [
        "-Xmx384m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        "-Djava.awt.headless=true",
        `-Dquarkus.http.port=${l.ports.registry}`,
        "-Dquarkus.http.host=127.0.0.1",
        // And https on a port of its own, with the stack's server certificate (secured tests).
        `-Dquarkus.http.ssl-port=${l.ports.registryTls}`,
        `-Dquarkus.http.ssl.certificate.files=${tls.serverCertFile}`,
        `-Dquarkus.http.ssl.certificate.key-files=${tls.serverKeyFile}`,
        "-Dquarkus.http.insecure-requests=enabled",
        "-Dquarkus.management.enabled=false",
        // HTTP basic auth by Quarkus with one embedded user: Apicurio's own auth needs an OIDC server.
        "-Dquarkus.security.users.embedded.enabled=true",
        "-Dquarkus.security.users.embedded.plain-text=true",
        `-Dquarkus.security.users.embedded.users.${STACK_USER}=${stackSecrets(l).registryPassword}`,
        "-Dquarkus.http.auth.basic=true",
        "-Dquarkus.http.auth.permission.idd.paths=/apis/*",
        "-Dquarkus.http.auth.permission.idd.policy=authenticated",
        "-jar",
        apicurioJar(l),
      ],
    };
  },
  async ready(l) {
    try {
      const auth = Buffer.from(`${STACK_USER}:${stackSecrets(l).registryPassword}`).toString("base64");
      const res = await fetch(`http://127.0.0.1:${l.ports.registry}/apis/ccompat/v7/subjects`, {
        headers: { authorization: `Basic ${auth}` },
        signal: AbortSignal.timeout(1000),
      });
      return res.ok;
    } catch {
      return false;
    }
  },
};

export const SERVICES: Record<ServiceName, ServiceSpec> = {
  redis,
  "redis-auth": redisAuth,
  kafka,
  mongodb,
  "mongodb-auth": mongodbAuth,
  registry,
  ...CLUSTER_SPECS,
};
