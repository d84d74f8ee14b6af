// The rcpc VS Code extension: starts `rcpc lsp` (stdio) for .rcp files.
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const config = vscode.workspace.getConfiguration("rcpc");
  const command = config.get("path") || "rcpc";
  const variant = config.get("variant");
  client = new LanguageClient(
    "rcpc",
    "rcpc",
    { command, args: ["lsp"] },
    {
      documentSelector: [{ scheme: "file", language: "rcp" }],
      initializationOptions: variant ? { variant } : {},
    },
  );
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
