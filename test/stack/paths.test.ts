import { expect, test } from "vitest";
import { layoutFromEnv } from "../../stack/paths.js";
import { clusterLayout } from "../support/cluster-stack.js";

test("IDD_CLUSTER_PORT_BASE places the cluster profile, for `npm run stack` and the tests alike", () => {
  const env = { IDD_STACK_PORT_BASE: "30000", IDD_CLUSTER_PORT_BASE: "34000" };
  const stack = layoutFromEnv(env).ports;
  const tests = clusterLayout(env).ports;
  expect(stack.kafka).toBe(30092);
  expect(stack.kafkaNodes).toEqual([34101, 34102, 34103]);
  expect([stack.redisPrimary, ...stack.sentinels, ...stack.redisClusterNodes]).toEqual([
    tests.redisPrimary,
    ...tests.sentinels,
    ...tests.redisClusterNodes,
  ]);
  expect(tests.kafkaNodes).toEqual(stack.kafkaNodes);
  expect(layoutFromEnv({}).ports.kafkaNodes).toEqual([32101, 32102, 32103]);
  expect(() => layoutFromEnv({ IDD_CLUSTER_PORT_BASE: "80" })).toThrow(/IDD_CLUSTER_PORT_BASE must be an integer/);
});
