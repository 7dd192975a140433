"""One session of a tool-using agent on the `openai` SDK's Responses API, as its docs write one when the client keeps
the conversation (llama.cpp refuses previous_response_id): the response's output items appended to the input as the
SDK gives them, each function call answered with a function_call_output, until a response calls none.
Argument: the first prompt. Environment: OPENAI_BASE_URL, OPENAI_API_KEY."""
import json
import sys

import openai

TOOLS = [{"type": "function", "name": "lookup", "description": "Look a key up in the notes.",
          "parameters": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}}]

client = openai.OpenAI(max_retries=0, timeout=120)
conversation: list = [{"role": "user", "content": sys.argv[1]}]
for _ in range(6):  # bounded: the shim calls a tool a few times, then the model answers
    response = client.responses.create(model="tiny-qwen3", instructions="You are a careful agent. Use lookup when "
                                       "unsure.", input=conversation, tools=TOOLS, max_output_tokens=16)
    conversation += response.output  # the SDK's own items, as its docs append them
    calls = [item for item in response.output if item.type == "function_call"]
    if not calls:
        break
    conversation += [{"type": "function_call_output", "call_id": call.call_id,
                      "output": f"the note for {json.loads(call.arguments).get('key', '')}: 42"} for call in calls]
print("openai responses done:", len(conversation), "items")
