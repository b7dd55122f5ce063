// Talks to droidgo serve with the official openai package, the way a
// harness would: streams a tool call, asks for a whole answer, lists the
// models and uses a wrong key. Prints one JSON line for the Go test.
// Usage: node client.mjs BASE_URL API_KEY
import OpenAI from "openai";

const [baseURL, apiKey] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });

const tools = [
  {
    type: "function",
    function: {
      name: "tap",
      description: "Tap the element with the given index on the current screen.",
      parameters: {
        type: "object",
        properties: { index: { type: "integer", description: "index of the element in the element list", minimum: 0 } },
        required: ["index"],
      },
    },
  },
  {
    type: "function",
    function: {
      name: "type_text",
      description: "Type text into the focused field.",
      parameters: {
        type: "object",
        properties: { text: { type: "string", description: "the text to type" }, submit: { type: "boolean" } },
        required: ["text"],
      },
    },
  },
];
const messages = [
  { role: "system", content: "You operate an Android phone." },
  { role: "user", content: "Task: Turn on Wi-Fi\n\nCurrent screen:\n[0] text Internet\n[3] switch Wi-Fi (off)" },
];

const out = {};

// Streamed: reasoning_content deltas, then tool_calls pieces put together
// by index, the finish reason and the usage chunk.
const stream = await client.chat.completions.create({
  model: "spark",
  messages,
  tools,
  stream: true,
  stream_options: { include_usage: true },
  max_tokens: 48,
});
const calls = [];
let finish = null;
let reasoning = 0;
let usage = null;
for await (const chunk of stream) {
  if (chunk.usage) usage = chunk.usage;
  for (const choice of chunk.choices) {
    const d = choice.delta;
    if (d.reasoning_content) reasoning += d.reasoning_content.length;
    for (const tc of d.tool_calls ?? []) {
      calls[tc.index] ??= { name: "", arguments: "" };
      if (tc.function?.name) calls[tc.index].name += tc.function.name;
      if (tc.function?.arguments) calls[tc.index].arguments += tc.function.arguments;
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
}
out.streamed = { calls, finish, reasoning, usage };

// Whole.
const whole = await client.chat.completions.create({ model: "spark", messages, tools, tool_choice: "required", max_tokens: 48 });
out.whole = {
  calls: (whole.choices[0].message.tool_calls ?? []).map((c) => ({ name: c.function.name, arguments: c.function.arguments })),
  finish: whole.choices[0].finish_reason,
};

const models = await client.models.list();
out.models = models.data.map((m) => m.id);

try {
  await new OpenAI({ baseURL, apiKey: "wrong", maxRetries: 0 }).chat.completions.create({ model: "spark", messages });
  out.wrongKey = { status: 200 };
} catch (e) {
  out.wrongKey = { status: e.status, name: e.constructor.name };
}

console.log(JSON.stringify(out));
