/**
 * `npm run example -- java-spring|python|go|nestjs ARGS…`: builds or installs what the example in examples/
 * needs (first run only; stack/examples.ts), then runs it with ARGS, its output and exit code as its own.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { buildGoExample, buildSpringExample, NESTJS_EXAMPLE, PYTHON_EXAMPLE, pythonExampleVenv } from "./examples.js";
import { javaBin } from "./install.js";
import { layoutFromEnv } from "./paths.js";

const [example, ...args] = process.argv.slice(2);
const progress = (line: string) => process.stderr.write(`example: ${line}\n`);
const layout = layoutFromEnv();
let cmd: string[];
if (example === "java-spring") cmd = [javaBin() ?? "java", "-jar", await buildSpringExample(layout, progress), ...args];
else if (example === "python") cmd = [await pythonExampleVenv(layout, progress), join(PYTHON_EXAMPLE, "client.py"), ...args];
else if (example === "go") cmd = [await buildGoExample(layout, progress), ...args];
else if (example === "nestjs") cmd = [process.execPath, "--import", "tsx", NESTJS_EXAMPLE, ...args];
else {
  process.stderr.write("usage: npm run example -- java-spring|python|go|nestjs ARGS…\n");
  process.exit(2);
}
const child = spawn(cmd[0] as string, cmd.slice(1), { stdio: "inherit" });
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
