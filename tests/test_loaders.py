"""Templates from files: .jinja, tokenizer_config.json (string or named list), GGUF metadata."""

import json

import pytest

from conftest import DATA
from tui.context.templates.library import TemplateNotFound, load_template

MESSAGES = [{"role": "user", "content": "hi"}]


def test_jinja_file(tmp_path):
    path = tmp_path / "mine.jinja"
    path.write_text("{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}")
    template = load_template(str(path))
    assert template.render(MESSAGES) == "<user>hi"
    assert template.origin == f"file:{path}"


def test_tokenizer_config_string_template_and_tokens():
    template = load_template(str(DATA / "qwen3-tokenizer_config.json"))
    assert template.render(MESSAGES, add_generation_prompt=True).endswith("<|im_start|>assistant\n")
    assert template.defaults["eos_token"] == "<|im_end|>"


def test_tokenizer_config_named_list(tmp_path):
    path = tmp_path / "tokenizer_config.json"
    path.write_text(json.dumps({"chat_template": [
        {"name": "default", "template": "D{{ messages[0].content }}"},
        {"name": "tool_use", "template": "T{{ messages[0].content }}"}], "bos_token": {"content": "<s>"}}))
    template = load_template(str(path))
    assert template.render(MESSAGES) == "Dhi"
    assert template.defaults["bos_token"] == "<s>"


def test_tokenizer_config_without_template(tmp_path):
    path = tmp_path / "tokenizer_config.json"
    path.write_text(json.dumps({"bos_token": "<s>"}))
    with pytest.raises(TemplateNotFound, match="no chat_template"):
        load_template(str(path))


def test_gguf_metadata_without_weights(tmp_path):
    gguf = pytest.importorskip("gguf")
    path = tmp_path / "tiny.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_chat_template("[{{ bos_token }}]{{ messages[0].content }}")
    writer.add_token_list(["<unk>", "<s>", "</s>", "hi"])
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    template = load_template(str(path))
    assert template.render(MESSAGES) == "[<s>]hi"
    assert template.defaults == {"bos_token": "<s>", "eos_token": "</s>"}


def test_directory_is_rejected(tmp_path):
    with pytest.raises(TemplateNotFound, match="directory"):
        load_template(str(tmp_path))
