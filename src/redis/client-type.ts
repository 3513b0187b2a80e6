/** What idd talks to: one Redis (standalone, or a primary found through Sentinel) or a Redis Cluster. */
import type { Cluster, Redis } from "ioredis";

export type RedisClient = Redis | Cluster;
