"""One session of a LangChain `ChatOpenAI` agent loop with a bound tool, as LangChain's docs write one.
Argument: the first prompt. Environment: OPENAI_BASE_URL, OPENAI_API_KEY."""
import sys

from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI


@tool
def lookup(key: str) -> str:
    """Look a key up in the notes."""
    return f"the note for {key}: 42"


model = ChatOpenAI(model="tiny-qwen3", max_tokens=12, max_retries=0, timeout=120).bind_tools([lookup])
messages = [SystemMessage("You are a careful agent. Use lookup when unsure."), HumanMessage(sys.argv[1])]
for _ in range(6):
    reply = model.invoke(messages)
    messages.append(reply)
    if not reply.tool_calls:
        break
    for call in reply.tool_calls:
        messages.append(ToolMessage(lookup.invoke(call["args"]), tool_call_id=call["id"]))
print("langchain done:", len(messages), "messages")
