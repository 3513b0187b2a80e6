/**
 * Set up before every test file (vitest.config.ts `setupFiles`): kafkajs loaded through idd's seam,
 * as in a worker, whatever the file imports first. kafkajs takes idd's replacements only when it is
 * first loaded by `loadKafkajs` (src/transport/kafka/kafkajs-modules.ts); a test file importing `kafkajs`
 * on its first lines used to load kafkajs's own modules, so its in-process workers ran kafkajs's
 * batch decoder, metadata parse and record codecs instead of the ones production runs.
 */
import { kafkajsHasIddModules } from "../../src/transport/kafka/kafkajs-modules.js";

if (!kafkajsHasIddModules()) throw new Error("kafkajs was loaded before idd's seam: its own modules run in this test process, not idd's");
