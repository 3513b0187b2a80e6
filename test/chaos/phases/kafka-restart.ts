/** `kafka-restart`: the broker down and up again. */
import type { StackControl } from "../private-stack.js";
import type { PhaseState } from "../records.js";

export interface KafkaRestartContext {
  stack: Pick<StackControl, "service">;
}

export async function kafkaRestart(p: PhaseState, { stack }: KafkaRestartContext): Promise<void> {
  await stack.service("kafka", "down", p.notes);
  await stack.service("kafka", "up", p.notes);
  p.healedAt = Date.now();
}
