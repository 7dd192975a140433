"""Varied conversations used against the real server (plain text: no control strings in content)."""

TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Get the weather.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}

CONVERSATIONS = {
    "single": ([{"role": "user", "content": "Hello there"}], None),
    "system_user": ([{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi"}], None),
    "multi_turn": ([{"role": "system", "content": "Be kind."}, {"role": "user", "content": "One?"},
                    {"role": "assistant", "content": "Yes, one."}, {"role": "user", "content": "Two?"},
                    {"role": "assistant", "content": "Two it is."}, {"role": "user", "content": "Three?"}], None),
    "unicode": ([{"role": "user", "content": "Héllo wörld — 你好，世界！ 👋🏽 مرحبا ∑x² ≤ ∞"}], None),
    "whitespace": ([{"role": "user", "content": "  leading and trailing  \n\n\tTabs\r\nCRLF  "}], None),
    "code": ([{"role": "user", "content": "```python\ndef f(x):\n    return {'a': [1, 2]}\n```"}], None),
    "tools_offered": ([{"role": "system", "content": "Use tools."}, {"role": "user", "content": "Weather?"}], TOOLS),
    "tool_roundtrip": ([{"role": "user", "content": "Weather in Paris?"},
                        {"role": "assistant", "content": "", "tool_calls": [CALL]},
                        {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 18}"},
                        {"role": "assistant", "content": "It is 18 degrees."},
                        {"role": "user", "content": "Thanks"}], TOOLS),
    "reasoning_history": ([{"role": "user", "content": "2+2?"},
                           {"role": "assistant", "content": "4", "reasoning_content": "two plus two"},
                           {"role": "user", "content": "3+3?"}], None),
    "long": ([{"role": "user", "content": " ".join(f"word{i}" for i in range(600))}], None),
    "empty_assistant": ([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                         {"role": "user", "content": ""}], None),
}
