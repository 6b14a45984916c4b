// An editor's side of ACP, on the official TypeScript SDK (@agentclientprotocol/sdk): it
// parses every message stepper sends against the protocol's schemas, so a field stepper
// spells wrong fails here. Drives `stepper acp` through a session and prints what it saw
// as one JSON object on stdout.
//
// node client.mjs STEPPER CWD

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [stepper, cwd] = process.argv.slice(2);
const agent = spawn(stepper, ["acp"], { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));

const updates = [];
const asked = [];
const app = acp
  .client({ name: "stepper-e2e" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params.update);
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    asked.push(params);
    const allow = params.options.find((o) => o.kind === "allow_once");
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  });

const seen = await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {},
    clientInfo: { name: "stepper-e2e", version: "1" },
  });
  const session = await ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
  const prompt = (text) =>
    ctx.request(acp.methods.agent.session.prompt, {
      sessionId: session.sessionId,
      prompt: [{ type: "text", text }],
    });
  const first = await prompt("hello");
  const second = await prompt("make a file");
  const list = await ctx.request(acp.methods.agent.session.list, {});
  const before = updates.length;
  const loaded = await ctx.request(acp.methods.agent.session.load, {
    sessionId: session.sessionId,
    cwd,
    mcpServers: [],
  });
  return { init, session, first, second, list, loaded, replayed: updates.length - before };
});
agent.stdin.end();
console.log(JSON.stringify({ ...seen, updates, asked }));
