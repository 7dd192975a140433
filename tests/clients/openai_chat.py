"""One session of a tool-using agent on the `openai` SDK's chat completions, as its docs write one: the reply's
message appended as the SDK gives it (a tool-call turn has content None), each tool answered, until a reply calls
none. Argument: the first prompt. Environment: OPENAI_BASE_URL, OPENAI_API_KEY."""
import json
import sys

import openai

TOOLS = [{"type": "function", "function": {
    "name": "lookup", "description": "Look a key up in the notes.",
    "parameters": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}}}]

client = openai.OpenAI(max_retries=0, timeout=120)
messages = [{"role": "system", "content": "You are a careful agent. Use lookup when unsure."},
            {"role": "user", "content": sys.argv[1]}]
for _ in range(6):  # bounded: the shim calls a tool a few times, then the model answers
    message = client.chat.completions.create(model="tiny-qwen3", messages=messages, tools=TOOLS,
                                             max_tokens=12).choices[0].message
    messages.append(message)  # the SDK's own object, as its docs append it
    if not message.tool_calls:
        break
    for call in message.tool_calls:
        key = json.loads(call.function.arguments).get("key", "")
        messages.append({"role": "tool", "tool_call_id": call.id, "content": f"the note for {key}: 42"})
print("openai chat done:", len(messages), "messages")
