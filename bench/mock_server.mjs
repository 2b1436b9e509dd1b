// A deterministic loopback model server for the provider benchmarks. It speaks four wire formats well enough for every
// client under test: OpenAI Chat Completions and Responses, Anthropic Messages, Gemini generateContent. It reads each
// request body whole (so a long history costs the client its real upload), then answers with a one-line reply or, for a
// streamed call, N text events. N comes from the model name: "...-events-2000" streams 2,000 events (default 50).
//
//   node bench/mock_server.mjs [port]     prints "listening <port>" when ready; port 0 picks a free one
//
// GET /__connections answers how many connections the server has accepted, so a benchmark can count the new
// connections each client opens.
import http from "node:http";

const port = Number(process.argv[2] ?? 0);
// Each event carries a different word, as a real stream does (some clients refuse a stream that repeats itself).
const word = (i) => `w${i} `;

function eventsFor(model) {
  const m = /events-(\d+)/.exec(model ?? "");
  return m ? Number(m[1]) : 50;
}

function sse(res, chunks) {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  res.end(chunks.join(""));
}

function json(res, body) {
  const text = JSON.stringify(body);
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

function openaiChat(req, res, body) {
  const n = eventsFor(body.model);
  if (!body.stream) {
    return json(res, {
      id: "chatcmpl-mock", object: "chat.completion", created: 1764600000, model: body.model,
      choices: [{ index: 0, message: { role: "assistant", content: "Hello there.", refusal: null }, logprobs: null, finish_reason: "stop" }],
      usage: { prompt_tokens: 1000, completion_tokens: 3, total_tokens: 1003 },
    });
  }
  const head = { id: "chatcmpl-mock", object: "chat.completion.chunk", created: 1764600000, model: body.model };
  const out = [];
  out.push(`data: ${JSON.stringify({ ...head, choices: [{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }] })}\n\n`);
  for (let i = 0; i < n; i++) {
    out.push(`data: ${JSON.stringify({ ...head, choices: [{ index: 0, delta: { content: word(i) }, logprobs: null, finish_reason: null }] })}\n\n`);
  }
  out.push(`data: ${JSON.stringify({ ...head, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: "stop" }] })}\n\n`);
  out.push(`data: ${JSON.stringify({ ...head, choices: [], usage: { prompt_tokens: 1000, completion_tokens: n, total_tokens: 1000 + n } })}\n\n`);
  out.push("data: [DONE]\n\n");
  sse(res, out);
}

function responseObject(model, text, status, outputTokens) {
  return {
    id: "resp_mock", object: "response", created_at: 1764600000, status, model,
    output: status === "completed" ? [{ type: "message", id: "msg_mock", status: "completed", role: "assistant",
      content: [{ type: "output_text", text, annotations: [], logprobs: [] }] }] : [],
    parallel_tool_calls: true, tool_choice: "auto", tools: [], error: null, incomplete_details: null,
    instructions: null, metadata: {}, temperature: 1.0, top_p: 1.0, text: { format: { type: "text" } },
    usage: status === "completed" ? { input_tokens: 1000, input_tokens_details: { cached_tokens: 0 }, output_tokens: outputTokens,
      output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 1000 + outputTokens } : null,
  };
}

function openaiResponses(req, res, body) {
  const n = eventsFor(body.model);
  if (!body.stream) return json(res, responseObject(body.model, "Hello there.", "completed", 3));
  let seq = 0;
  const ev = (type, data) => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`;
  const out = [];
  out.push(ev("response.created", { response: responseObject(body.model, "", "in_progress", 0) }));
  out.push(ev("response.output_item.added", { output_index: 0, item: { type: "message", id: "msg_mock", status: "in_progress", role: "assistant", content: [] } }));
  out.push(ev("response.content_part.added", { item_id: "msg_mock", output_index: 0, content_index: 0, part: { type: "output_text", text: "", annotations: [] } }));
  for (let i = 0; i < n; i++) out.push(ev("response.output_text.delta", { item_id: "msg_mock", output_index: 0, content_index: 0, delta: word(i), logprobs: [] }));
  const text = Array.from({ length: n }, (_, i) => word(i)).join("");
  out.push(ev("response.output_text.done", { item_id: "msg_mock", output_index: 0, content_index: 0, text, logprobs: [] }));
  out.push(ev("response.content_part.done", { item_id: "msg_mock", output_index: 0, content_index: 0, part: { type: "output_text", text, annotations: [] } }));
  out.push(ev("response.output_item.done", { output_index: 0, item: { type: "message", id: "msg_mock", status: "completed", role: "assistant", content: [{ type: "output_text", text, annotations: [] }] } }));
  out.push(ev("response.completed", { response: responseObject(body.model, text, "completed", n) }));
  sse(res, out);
}

function anthropic(req, res, body) {
  const n = eventsFor(body.model);
  const usage = { input_tokens: 1000, output_tokens: 3, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  if (!body.stream) {
    return json(res, { id: "msg_mock", type: "message", role: "assistant", model: body.model,
      content: [{ type: "text", text: "Hello there." }], stop_reason: "end_turn", stop_sequence: null, usage });
  }
  const ev = (type, data) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const out = [];
  out.push(ev("message_start", { message: { id: "msg_mock", type: "message", role: "assistant", model: body.model, content: [],
    stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } } }));
  out.push(ev("content_block_start", { index: 0, content_block: { type: "text", text: "" } }));
  out.push(ev("ping", {}));
  for (let i = 0; i < n; i++) out.push(ev("content_block_delta", { index: 0, delta: { type: "text_delta", text: word(i) } }));
  out.push(ev("content_block_stop", { index: 0 }));
  out.push(ev("message_delta", { delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: n } }));
  out.push(ev("message_stop", {}));
  sse(res, out);
}

function gemini(req, res, body, model, stream) {
  const n = eventsFor(model);
  const usage = { promptTokenCount: 1000, candidatesTokenCount: 3, totalTokenCount: 1003 };
  if (!stream) {
    return json(res, { candidates: [{ content: { parts: [{ text: "Hello there." }], role: "model" }, finishReason: "STOP", index: 0 }],
      usageMetadata: usage, modelVersion: model, responseId: "resp-mock" });
  }
  const out = [];
  for (let i = 0; i < n - 1; i++) {
    out.push(`data: ${JSON.stringify({ candidates: [{ content: { parts: [{ text: word(i) }], role: "model" }, index: 0 }],
      usageMetadata: { promptTokenCount: 1000, totalTokenCount: 1000 }, modelVersion: model, responseId: "resp-mock" })}\r\n\r\n`);
  }
  out.push(`data: ${JSON.stringify({ candidates: [{ content: { parts: [{ text: word(n - 1) }], role: "model" }, finishReason: "STOP", index: 0 }],
    usageMetadata: { promptTokenCount: 1000, candidatesTokenCount: n, totalTokenCount: 1000 + n }, modelVersion: model, responseId: "resp-mock" })}\r\n\r\n`);
  sse(res, out);
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    let body = {};
    try { body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : {}; } catch { body = {}; }
    const url = new URL(req.url, "http://127.0.0.1");
    const path = url.pathname;
    if (path === "/__connections") return json(res, { connections });
    if (path.endsWith("/chat/completions")) return openaiChat(req, res, body);
    if (path.endsWith("/responses")) return openaiResponses(req, res, body);
    if (path.endsWith("/messages")) return anthropic(req, res, body);
    const g = /\/models\/([^/:]+):(generateContent|streamGenerateContent)$/.exec(path);
    if (g) return gemini(req, res, body, g[1], g[2] === "streamGenerateContent");
    res.writeHead(404, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message: `no route ${path}` } }));
  });
});
let connections = 0;
server.on("connection", () => { connections += 1; });
server.keepAliveTimeout = 60000;
server.listen(port, "127.0.0.1", () => console.log(`listening ${server.address().port}`));
