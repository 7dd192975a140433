"""Identity as data: "exact" comes from what a tokenizer is (its source and vocabulary hash), never its name;
one model registry answers for every family; names from servers and session files cannot steer it."""

from __future__ import annotations

import json
import lzma
from importlib import resources

import pytest

from tui.context.assemble import assemble
from tui.context.families.identity import ESTIMATE, MODEL_FILE, SERVER, SHIPPED, Identity, estimate, exact_counts, \
    tokenizer_identity
from tui.context.families.registry import FAMILIES, cache_rule, context_window, family_for_model, offline_tokenizer, \
    recorded_tokenizer, tokenizer_for_family, tokenizer_for_model
from tui.context.templates.library import builtin_names, builtin_template, template_from_text
from tui.context.tokens.counting import get_tokenizer

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello wörld, 42 times?"}]


def shipped_qwen3_bytes() -> bytes:
    return lzma.decompress(resources.files("tui.context.tokens").joinpath("tokenizer_files", "qwen3-tokenizer.json.xz")
                           .read_bytes())


def tiny_tokenizer_json() -> str:
    """A real, loadable tokenizer.json whose vocabulary is nobody's."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    tokenizer = Tokenizer(models.WordLevel({"[UNK]": 0, "hello": 1, "<|im_start|>": 2}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    return tokenizer.to_str()


# --- exact is decided by identity ------------------------------------------------------------------------------

def test_the_shipped_tokenizer_under_another_name_is_exact(tmp_path):
    renamed = tmp_path / "my-vocab.json"
    renamed.write_bytes(shipped_qwen3_bytes())
    tokenizer = get_tokenizer(str(renamed))
    identity = tokenizer_identity(tokenizer)
    assert identity.source == MODEL_FILE and identity.family == "qwen"
    assert identity.digest == tokenizer_identity(get_tokenizer("qwen3")).digest
    assert assemble(MESSAGES, builtin_template("qwen3"), tokenizer).counts.exact
    assert not assemble(MESSAGES, builtin_template("llama3"), tokenizer).counts.exact  # not a Llama's own


@pytest.mark.bulk
def test_the_shipped_tokenizer_compressed_under_another_name_is_exact(tmp_path):
    renamed = tmp_path / "vocab.bin.xz"
    renamed.write_bytes(lzma.compress(shipped_qwen3_bytes(), preset=0))  # the fastest preset: the same bytes back
    assert tokenizer_identity(get_tokenizer(str(renamed))).family == "qwen"


@pytest.mark.parametrize("name", ["qwen3-tokenizer.json.xz", "qwen3.json", "tokenizer.json"])
def test_a_file_named_like_a_shipped_one_with_other_content_is_not_exact(tmp_path, name):
    impostor = tmp_path / name
    text = tiny_tokenizer_json().encode()
    impostor.write_bytes(lzma.compress(text) if name.endswith(".xz") else text)
    tokenizer = get_tokenizer(str(impostor))
    identity = tokenizer_identity(tokenizer)
    assert identity.source == MODEL_FILE and identity.family is None
    for template in ("qwen3", "chatml", "llama3"):
        assert not assemble(MESSAGES, builtin_template(template), tokenizer).counts.exact


@pytest.mark.bulk
def test_one_byte_changed_in_the_shipped_vocabulary_is_not_its_family(tmp_path):
    data = json.loads(shipped_qwen3_bytes())
    vocab = data["model"]["vocab"]
    vocab["hello"], vocab["world"] = vocab["world"], vocab["hello"]  # two ids swapped: another vocabulary
    changed = tmp_path / "qwen3-tokenizer.json"
    changed.write_text(json.dumps(data, ensure_ascii=False))
    assert tokenizer_identity(get_tokenizer(str(changed))).family is None
    assert not assemble(MESSAGES, builtin_template("qwen3"), get_tokenizer(str(changed))).counts.exact


class ServerCounted:
    """Counts with a local vocabulary but carries the server's identity, as ServerTokenizer does."""

    def __init__(self):
        self.inner = get_tokenizer("o200k_base")
        self.name = "o200k_base"  # a shipped name: the identity, not this, says the server counts
        self.identity = Identity(None, SERVER, None, "server:example")

    def plain_starts(self, text):
        return self.inner.plain_starts(text)

    def special_count(self, text):
        return 1

    def specials(self):
        return set()


def test_the_servers_tokenizer_is_exact_whatever_the_template():
    from tui.client.endpoint import Endpoint
    from tui.client.server_tokenizer import ServerTokenizer
    real = ServerTokenizer(Endpoint("http://127.0.0.1:9/v1"))
    try:
        assert tokenizer_identity(real).source == SERVER and real.remote
        assert exact_counts(tokenizer_identity(real), None)
    finally:
        real.close()
    for template in ("llama3", "chatml", "harmony"):
        assert assemble(MESSAGES, builtin_template(template), ServerCounted()).counts.exact


def test_a_server_name_without_the_servers_identity_is_not_exact():
    class NamedLikeServer:
        name = "server:127.0.0.1:8080"

        def __init__(self):
            self.inner = get_tokenizer("o200k_base")

        def plain_starts(self, text):
            return self.inner.plain_starts(text)

        def special_count(self, text):
            return 1

        def specials(self):
            return set()

    assert tokenizer_identity(NamedLikeServer()).source == ESTIMATE
    assert not assemble(MESSAGES, builtin_template("chatml"), NamedLikeServer()).counts.exact


def test_an_estimate_is_never_exact():
    from tui.controller.workbench import CharEstimate
    for family in (None, "qwen", "gpt-oss"):
        for verified in (None, True, False):
            assert not exact_counts(estimate("x", family), family, verified)
    assert tokenizer_identity(CharEstimate()).source == ESTIMATE
    assert not assemble(MESSAGES, builtin_template("qwen3"), CharEstimate(), exact=True).counts.exact


def test_the_local_stand_in_while_the_server_is_away_is_an_estimate():
    from tui.controller.tokenizer_fallback import FallbackTokenizer

    class Away:
        name, identity = "server:gone", Identity(None, SERVER, None, "server:gone")

        def usable(self):
            return False

        def specials(self):
            return set()

    local = get_tokenizer("qwen3")
    fallback = FallbackTokenizer(Away(), local, lambda _: None)
    assert tokenizer_identity(fallback).source == SERVER
    snapshot = assemble(MESSAGES, builtin_template("qwen3"), fallback, exact=True)
    assert fallback.falling_back and tokenizer_identity(fallback).source == ESTIMATE
    assert not snapshot.counts.exact  # it fell back while counting: decided after the count, not before
    assert tokenizer_identity(fallback).family == "qwen"  # the same vocabulary, standing in
    assert not assemble(MESSAGES, builtin_template("qwen3"), fallback, exact=True).counts.exact
    assert snapshot.counts.total > 0


def test_shipped_tokenizers_are_exact_for_their_own_family_only():
    cases = {("qwen3", "qwen3"): True, ("chatml", "qwen3"): True, ("harmony", "o200k_harmony"): True,
             ("harmony", "o200k_base"): False, ("chatml", "o200k_base"): False, ("llama3", "cl100k_base"): False,
             ("llama3", "qwen3"): False, ("gemma", "o200k_base"): False}
    for (template, tokenizer), expected in cases.items():
        assert assemble(MESSAGES, builtin_template(template), get_tokenizer(tokenizer)).counts.exact is expected


def test_the_servers_verdict_on_a_local_tokenizer_decides():
    server_template = template_from_text(builtin_template("qwen3").source + "\n", "server:llama.cpp", "qwen3",
                                         kind=SERVER)
    assert server_template.identity.family is None  # another text, even under a built-in's name
    local = get_tokenizer("qwen3")
    assert not assemble(MESSAGES, server_template, local).counts.exact
    assert assemble(MESSAGES, server_template, local, exact=True).counts.exact
    assert not assemble(MESSAGES, builtin_template("qwen3"), local, exact=False).counts.exact


def test_a_templates_family_comes_from_its_text_not_its_name():
    copy = template_from_text(builtin_template("llama3").source, "file:/tmp/x.jinja", "not-a-llama")
    assert (copy.identity.family, copy.identity.source) == ("llama3", MODEL_FILE)
    named = template_from_text("{% for m in messages %}{{ m.content }}{% endfor %}", "file:x", "qwen3")
    assert named.identity.family is None
    assert builtin_template("qwen3").identity.source == SHIPPED


def test_identity_is_frozen_and_its_source_is_one_of_four():
    identity = Identity("qwen", SHIPPED, None, "qwen3")
    with pytest.raises(AttributeError):
        identity.family = "llama3"  # type: ignore[misc]
    with pytest.raises(ValueError):
        Identity("qwen", "server:", None, "x")


# --- the registry answers for each family ----------------------------------------------------------------------

@pytest.mark.parametrize("model,family", [
    ("Qwen/Qwen3-0.6B", "qwen"), ("Qwen/Qwen2.5-7B-Instruct", "qwen"), ("qwen3:8b", "qwen"), ("QwQ-32B", "qwen"),
    ("meta-llama/Llama-3.1-8B-Instruct", "llama3"), ("llama3.2:3b", "llama3"),
    ("Meta-Llama-3-8B-Instruct-Q4_K_M.gguf", "llama3"),
    ("gpt-4o-mini", "openai-o200k"), ("openai/gpt-5", "openai-o200k"), ("o3-mini", "openai-o200k"),
    ("gpt-4", "openai-cl100k"), ("gpt-3.5-turbo", "openai-cl100k"),
    ("gpt-oss-20b", "gpt-oss"), ("openai/gpt-oss-120b", "gpt-oss"),
    ("deepseek-r1-distill", "deepseek"), ("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "deepseek"),
    ("gemma-2-2b-it", "gemma"), ("google/gemma-3-4b-it", "gemma"),
    ("mistral-small", "mistral"), ("mistralai/Mistral-Nemo-Instruct-2407", "mistral"),
    ("microsoft/Phi-3.5-mini-instruct", "phi3"),
    ("mystery-model", None), ("llama-2-7b", None), ("", None),
])
def test_the_family_of_a_model_id(model, family):
    found = family_for_model(model)
    assert (found.key if found else None) == family


@pytest.mark.parametrize("model,tokenizer", [  # what the old MODEL_PREFIXES table answered, kept
    ("gpt-4o-mini", "o200k_base"), ("gpt-4.1", "o200k_base"), ("gpt-4.5-preview", "o200k_base"),
    ("gpt-5", "o200k_base"), ("chatgpt-4o-latest", "o200k_base"), ("o1-preview", "o200k_base"),
    ("o3-mini", "o200k_base"), ("o4-mini", "o200k_base"), ("gpt-4", "cl100k_base"), ("gpt-4-turbo", "cl100k_base"),
    ("gpt-3.5-turbo", "cl100k_base"), ("text-embedding-3-small", "cl100k_base"), ("gpt-oss-20b", "o200k_harmony"),
    ("openai/gpt-oss-120b", "o200k_harmony"), ("Qwen/Qwen3-8B", "qwen3"), ("Qwen/Qwen3-0.6B", "qwen3"),
    ("tiny-qwen3-test", "qwen3"), ("meta-llama/Llama-3.1-8B-Instruct", "o200k_base"),
    ("deepseek-r1-distill", "o200k_base"), ("gemma-2-2b-it", "o200k_base"), ("mistral-small", "o200k_base"),
    ("mystery", "o200k_base"),
    ("Qwen/Qwen2.5-7B-Instruct", "qwen3"),  # new: Qwen 2.5 shares Qwen3's vocabulary (the old table said o200k_base)
])
def test_the_tokenizer_for_a_model_id(model, tokenizer):
    assert tokenizer_for_model(model) == tokenizer


@pytest.mark.parametrize("model,window", [  # what the old HOSTED_CONTEXT table answered, kept
    ("gpt-4.1", 1_047_576), ("gpt-4.1-mini", 1_047_576), ("gpt-5", 400_000), ("openai/gpt-5-mini", 400_000),
    ("gpt-4o-mini", 128_000), ("o1", 200_000), ("o3-mini", 200_000), ("o4-mini", 200_000),
    ("gpt-4-turbo", 128_000), ("gpt-4-0613", 8_192), ("gpt-3.5-turbo", 16_385), ("gpt-oss-120b", 131_072),
    ("Qwen/Qwen3-8B", None), ("mystery", None),
    ("gpt-4.5-preview", 128_000),  # new: the old table gave it gpt-4's 8,192
])
def test_the_context_window_hint(model, window):
    assert context_window(model) == window


@pytest.mark.parametrize("template,family,tokenizer", [  # the old NATIVE_TOKENIZER, by identity now
    ("qwen3", "qwen", "qwen3"), ("chatml", "qwen", "qwen3"), ("harmony", "gpt-oss", "o200k_harmony"),
    ("llama3", "llama3", "o200k_base"), ("mistral-v3", "mistral", "o200k_base"),
    ("mistral-tekken", "mistral", "o200k_base"), ("gemma", "gemma", "o200k_base"),
    ("deepseek-r1", "deepseek", "o200k_base"), ("phi3", "phi3", "o200k_base"),
])
def test_each_builtin_templates_family_and_tokenizer(template, family, tokenizer):
    identity = builtin_template(template).identity
    assert (identity.family, identity.source) == (family, SHIPPED)
    assert tokenizer_for_family(identity.family) == tokenizer


def test_every_builtin_template_is_in_the_registry():
    from tui.context.families.registry import HOSTED_TEMPLATES
    assert sorted(builtin_names()) == sorted([*(name for family in FAMILIES.values() for name in family.templates),
                                              *HOSTED_TEMPLATES.values()])


@pytest.mark.parametrize("key", sorted(key for key, family in FAMILIES.items() if family.tokenizer))
def test_each_shipped_tokenizers_hash_is_the_one_its_family_lists(key):
    identity = tokenizer_identity(get_tokenizer(FAMILIES[key].tokenizer))
    assert identity.source == SHIPPED and identity.family == key and identity.digest in FAMILIES[key].vocabularies


def test_stop_tokens_and_cache_rules():
    assert "<|im_end|>" in FAMILIES["qwen"].stop_tokens and "<|eot_id|>" in FAMILIES["llama3"].stop_tokens
    assert "<|return|>" in FAMILIES["gpt-oss"].stop_tokens and "<end_of_turn>" in FAMILIES["gemma"].stop_tokens
    assert cache_rule("llama.cpp", "gpt-4o") == "llama.cpp"
    assert cache_rule("openai", "gpt-4o-mini") == "openai"
    assert cache_rule("vllm", "Qwen/Qwen3-8B") == "unknown"


# --- names from servers and session files are hostile ----------------------------------------------------------

HOSTILE = ["qwen3" + "a" * 10_000, "gpt-4o" * 2_000, "qwen3\x1b[2J", "gpt-4o\n", "\x00qwen3", "qwen3\u202e",
           ".*", "(qwen3|gpt-4o)", "q.en3-8b", "[q]wen3", "\\bqwen3", "(a+)+$" * 50, "^gpt", "?", "*", "\ud800",
           "../../qwen3/..", None, 42, b"qwen3", ["qwen3"]]


@pytest.mark.parametrize("name", HOSTILE, ids=lambda n: repr(n)[:30])
def test_hostile_model_ids_fall_back_to_an_estimate(name):
    assert family_for_model(name) is None
    assert tokenizer_for_model(name) == "o200k_base"
    assert context_window(name) is None
    assert cache_rule("vllm", name) == "unknown"


@pytest.mark.parametrize("name", HOSTILE + ["server:127.0.0.1:8080", "/dev/zero", "~/models/tokenizer.json",
                                            "qwen3-tokenizer.json.xz", "QWEN3", " qwen3", ""],
                         ids=lambda n: repr(n)[:30])
def test_hostile_or_unknown_recorded_tokenizer_names_are_estimates(name):
    identity = recorded_tokenizer(name)
    assert identity.source == ESTIMATE and identity.family is None
    assert len(identity.name) <= 201 and identity.name.isprintable()
    assert not exact_counts(identity, "qwen", True)
    assert offline_tokenizer(name, "qwen") == "qwen3" and offline_tokenizer(name, None) == "o200k_base"


@pytest.mark.parametrize("name,family", [("qwen3", "qwen"), ("o200k_base", "openai-o200k"),
                                         ("o200k_harmony", "gpt-oss"), ("cl100k_base", "openai-cl100k")])
def test_old_session_files_name_shipped_tokenizers(name, family):
    identity = recorded_tokenizer(name)
    assert (identity.source, identity.family, identity.name) == (SHIPPED, family, name)
    assert offline_tokenizer(name, "llama3") == name


def test_a_stored_session_opens_with_the_tokenizer_its_name_means(tmp_path):
    from tui.commands.sessions_common import session_engine
    from tui.sessions.model import Session
    for recorded, template, expected in [("server:10.0.0.1:8080", "qwen3", "qwen3"), ("/dev/zero", "llama3", "o200k_base"),
                                         ("cl100k_base", "qwen3", "cl100k_base"), ("", "harmony", "o200k_harmony"),
                                         ("x" * 10_000 + "\x1b", "chatml", "qwen3")]:
        session = Session(template={"name": template, "origin": "builtin"}, tokenizer=recorded)
        _template, tokenizer = session_engine(session)
        assert tokenizer.name == expected
