/** What the stack needs to know of a service: its ports, how it starts, how it answers. */
import type { StackLayout } from "./paths.js";

export interface Launch {
  cmd: string;
  args: string[];
  cwd: string;
  env?: NodeJS.ProcessEnv;
}

export interface ServiceSpec {
  /** Ports this service listens on (all checked before starting). */
  ports(l: StackLayout): number[];
  /** Prepares data folders (once) and returns the command to run. */
  prepare(l: StackLayout): Promise<Launch>;
  /** Resolves true once the service answers a real request. */
  ready(l: StackLayout): Promise<boolean>;
}
