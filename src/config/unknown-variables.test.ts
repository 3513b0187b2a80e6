/** Unknown IDD_* variables: one warn line at start, naming the setting a typo most likely meant. */
import { Writable } from "node:stream";
import { pino } from "pino";
import { expect, test } from "vitest";
import { closestVariable, unknownVariables, warnUnknownVariables } from "./unknown-variables.js";

test("a typo is unknown and names the closest setting; known names, _FILE forms and other variables are not", () => {
  const env = {
    IDD_SESION_TIMEOUT_MS: "30000",
    IDD_SOMETHING_ELSE: "1",
    IDD_MAX_COUNT: "5",
    IDD_HTTP_TOKEN_FILE: "/t",
    IDD_OBFUSCATION_KEYS_FILE: "/k",
    IDD_STACK_DIR: "/s",
    LOG_LEVEL: "info",
    PATH: "/bin",
  };
  expect(unknownVariables(env)).toEqual([
    { name: "IDD_SESION_TIMEOUT_MS", closest: "IDD_SESSION_TIMEOUT_MS" },
    { name: "IDD_SOMETHING_ELSE" },
  ]);
  expect(closestVariable("IDD_MAX_COUNTS")).toBe("IDD_MAX_COUNT");
  expect(closestVariable("IDD_X")).toBeUndefined();
});

test("one warn line lists them all; none, no line", () => {
  const lines: { level: number; msg: string; unknown: string[] }[] = [];
  const logger = pino(
    { level: "info" },
    new Writable({
      write(chunk, _encoding, done) {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    }),
  );
  warnUnknownVariables({ IDD_SESION_TIMEOUT_MS: "1", IDD_FOO: "2", IDD_MAX_COUNT: "3" }, logger);
  warnUnknownVariables({ IDD_MAX_COUNT: "3" }, logger);
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatchObject({
    level: 40,
    unknown: ["IDD_FOO", "IDD_SESION_TIMEOUT_MS"],
    msg: "unknown IDD_* environment variables, not read by idd: IDD_FOO, IDD_SESION_TIMEOUT_MS (did you mean IDD_SESSION_TIMEOUT_MS?)",
  });
});
