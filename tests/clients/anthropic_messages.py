"""One session of a tool-using agent on the `anthropic` SDK's Messages API, streamed, as its docs write one.
Argument: the first prompt. Environment: ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY."""
import sys

import anthropic

TOOLS = [{"name": "lookup", "description": "Look a key up in the notes.",
          "input_schema": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}}]

client = anthropic.Anthropic(max_retries=0, timeout=120)
messages = [{"role": "user", "content": sys.argv[1]}]
for _ in range(6):
    with client.messages.stream(model="tiny-qwen3", system="You are a careful agent. Use lookup when unsure.",
                                messages=messages, tools=TOOLS, max_tokens=12) as stream:
        reply = stream.get_final_message()
    messages.append({"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in reply.content]})
    calls = [block for block in reply.content if block.type == "tool_use"]
    if not calls:
        break
    messages.append({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": call.id, "content": f"the note for {call.input.get('key')}: 42"}
        for call in calls]})
print("anthropic messages done:", len(messages), "messages")
