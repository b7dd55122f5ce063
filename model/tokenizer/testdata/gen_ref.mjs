// Development-time generator of the reference token ids (not run by tests):
// tokenizes every string of corpus.json and corpus-random.json (see
// gen_random.py) with llama.cpp, through the prebuilt library in
// node-llama-cpp@3.22.1, for each GGUF given, and writes
// testdata/ref-<name>.json and ref-random-<name>.json =
// {"model": name, "cases": [{"text", "ids", "ids_plain"}]}.
//
//   mkdir -p /tmp/nlc && cd /tmp/nlc && npm i -E node-llama-cpp@3.22.1 --ignore-scripts
//   node model/tokenizer/testdata/gen_ref.mjs model/tokenizer/testdata/*.gguf
//
// node-llama-cpp is resolved from $NLC (default /tmp/nlc). Texts are
// tokenized with special tokens parsed (llama_tokenize parse_special=true,
// add_special=false), and also with special tokens as plain text
// ("ids_plain").
import {createRequire} from "node:module";
import {readFileSync, writeFileSync} from "node:fs";
import path from "node:path";
import {fileURLToPath, pathToFileURL} from "node:url";

const nlcDir = process.env.NLC || "/tmp/nlc";
const require = createRequire(path.join(nlcDir, "package.json"));
const {getLlama, LlamaLogLevel} = await import(pathToFileURL(require.resolve("node-llama-cpp")).href);

const here = path.dirname(fileURLToPath(import.meta.url));
const corpora = {
    "": JSON.parse(readFileSync(path.join(here, "corpus.json"), "utf8")),
    "random-": JSON.parse(readFileSync(path.join(here, "corpus-random.json"), "utf8")),
};
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});

for (const modelPath of process.argv.slice(2)) {
    const model = await llama.loadModel({modelPath, gpuLayers: 0, vocabOnly: true});
    const name = path.basename(modelPath, ".gguf");
    for (const [prefix, corpus] of Object.entries(corpora)) {
        const cases = corpus.map((text) => ({
            text,
            ids: Array.from(model.tokenize(text, true)),
            ids_plain: Array.from(model.tokenize(text, false)),
        }));
        const generator = "node-llama-cpp " + llama.llamaCppRelease.release + " model.tokenize(text, specialTokens)";
        const lines = cases.map((c) => JSON.stringify(c));
        writeFileSync(path.join(here, "ref-" + prefix + name + ".json"),
            "{\"model\": " + JSON.stringify(name) + ", \"generator\": " + JSON.stringify(generator) +
            ", \"cases\": [\n" + lines.join(",\n") + "\n]}\n");
        console.log(prefix + name + ": " + cases.length + " cases");
    }
    await model.dispose();
}
