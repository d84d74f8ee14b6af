// Tokenize files with the real TextMate engine of VS Code (vscode-textmate + vscode-oniguruma)
// and print, per file, each line's tokens as [text, scopes] (JSON on stdout).
// Usage: node tokenize.mjs GRAMMAR.json FILE...
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import vsctm from "vscode-textmate";
import oniguruma from "vscode-oniguruma";

const require = createRequire(import.meta.url);
const [grammarPath, ...files] = process.argv.slice(2);
const wasm = readFileSync(require.resolve("vscode-oniguruma/release/onig.wasm")).buffer;
await oniguruma.loadWASM(wasm);
const registry = new vsctm.Registry({
  onigLib: Promise.resolve({
    createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
    createOnigString: (s) => new oniguruma.OnigString(s),
  }),
  loadGrammar: async () => vsctm.parseRawGrammar(readFileSync(grammarPath, "utf8"), grammarPath),
});
const grammar = await registry.loadGrammar("source.rcp");
const out = {};
for (const file of files) {
  let state = vsctm.INITIAL;
  out[file] = readFileSync(file, "utf8").split("\n").map((line) => {
    const r = grammar.tokenizeLine(line, state);
    state = r.ruleStack;
    return r.tokens.map((t) => [line.slice(t.startIndex, t.endIndex), t.scopes]);
  });
}
process.stdout.write(JSON.stringify(out));
