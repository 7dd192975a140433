"""One session of a tool loop on the LiteLLM SDK (`litellm.completion`, an OpenAI-compatible server), streamed.
Argument: the first prompt. Environment: HARNESS_BASE_URL, HARNESS_API_KEY (LiteLLM's own `api_base`/`api_key`)."""
import json
import os
import sys

import litellm

TOOLS = [{"type": "function", "function": {
    "name": "lookup", "description": "Look a key up in the notes.",
    "parameters": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}}}]

messages = [{"role": "system", "content": "You are a careful agent. Use lookup when unsure."},
            {"role": "user", "content": sys.argv[1]}]
for _ in range(6):
    chunks = list(litellm.completion(model="openai/tiny-qwen3", api_base=os.environ["HARNESS_BASE_URL"],
                                     api_key=os.environ["HARNESS_API_KEY"], messages=messages, tools=TOOLS,
                                     max_tokens=12, stream=True, num_retries=0, timeout=120))
    message = litellm.stream_chunk_builder(chunks, messages=messages).choices[0].message
    messages.append(message.model_dump(exclude_none=True))
    if not message.tool_calls:
        break
    for call in message.tool_calls:
        key = json.loads(call.function.arguments or "{}").get("key", "")
        messages.append({"role": "tool", "tool_call_id": call.id, "content": f"the note for {key}: 42"})
print("litellm done:", len(messages), "messages")
