"""One session of an OpenAI Agents SDK agent with a function tool (the SDK makes it strict), on the chat
completions model or the Responses model. Arguments: chat|responses, the first prompt.
Environment: OPENAI_BASE_URL, OPENAI_API_KEY."""
import asyncio
import sys

from agents import Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

set_tracing_disabled(True)  # traces would go to the hosted API: the harness reaches only loopback


@function_tool
def lookup(key: str) -> str:
    """Look a key up in the notes."""
    return f"the note for {key}: 42"


async def main(kind: str, prompt: str) -> None:
    client = AsyncOpenAI(max_retries=0, timeout=120)
    model = (OpenAIChatCompletionsModel if kind == "chat" else OpenAIResponsesModel)(model="tiny-qwen3",
                                                                                      openai_client=client)
    agent = Agent(name="harness", instructions="You are a careful agent. Use lookup when unsure.", model=model,
                  tools=[lookup])
    result = await Runner.run(agent, prompt, max_turns=6)
    print("agents", kind, "done:", repr(result.final_output)[:80])


asyncio.run(main(sys.argv[1], sys.argv[2]))
