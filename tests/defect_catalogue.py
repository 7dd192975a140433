"""One-line defects for tests/plant_defects.py, in groups: each group names the tests that must catch them.

Each defect is (file, text found exactly once, replacement, what it breaks), optionally followed by the
list of tests to run for it instead of its group's.
"""

from __future__ import annotations

GROUPS: dict[str, tuple[list[str], list[tuple]]] = {}

GROUPS["policy, cache, fences"] = (
    ["tests/test_budget.py", "tests/test_cache.py", "tests/test_fences.py", "tests/test_render_policies.py",
     "tests/test_incremental.py", "tests/test_cache_rules.py", "tests/test_cache_causes.py"],
    [
    ('tui/context/policy/truncation.py', 'return None if self.context_window is None else self.context_window - self.max_tokens', 'return None if self.context_window is None else self.context_window', 'budget ignores the reserved output'),
    ('tui/context/policy/truncation.py', 'total = overhead + sum(costs)', 'total = sum(costs)', "budget off by the template's own tokens"),
    ('tui/context/policy/truncation.py', 'if pinned[i] or role in ("system", "developer")}', 'if role in ("system", "developer")}', 'a pinned message can be dropped'),
    ('tui/context/policy/truncation.py', 'keep.add(users[-1])', 'keep.add(users[0])', 'the newest user message can be dropped'),
    ('tui/context/policy/truncation.py', 'if role == "tool" and units and', 'if False and units and', 'a tool call separated from its results'),
    ('tui/context/policy/truncation.py', 'if full or cost > left:', 'if cost > left:', 'drop-oldest skips a large unit and keeps older ones'),
    ('tui/context/policy/truncation.py', 'if full or cost > left:', 'if full or cost >= left:', 'ties broken the other way'),
    ('tui/context/policy/truncation.py', 'for unit in reversed(units):', 'for unit in units:', 'drops the newest instead of the oldest'),
    ('tui/context/policy/truncation.py', 'first_kept = users[-turns]', 'first_kept = users[-turns - 1]', 'keep-last-n keeps one turn too many'),
    ('tui/context/policy/truncation.py', 'previous.get(ids[i], request_number)) for i in sorted(dropped)]', 'request_number) for i in sorted(dropped)]', 'the ledger forgets since when a message is dropped'),
    ('tui/context/cache/rules.py', '    if shared < minimum or shared <= 0:', '    if shared <= minimum or shared <= 0:', 'OpenAI rule: 1,024 exactly is not cached'),
    ('tui/context/cache/rules.py', 'minimum=1024, step=128', 'minimum=1024, step=64', 'OpenAI rule: 64-token steps'),
    ('tui/context/cache/prefix.py', 'return max(0, min(prefix_tokens, total_tokens - 1))', 'return max(0, min(prefix_tokens, total_tokens))', 'llama.cpp rule: the last token not re-evaluated'),
    ('tui/context/tokens/counting.py', 'return self.before[index] + max(0, bisect_right(starts, offset) - 1)', 'return self.before[index] + max(0, bisect_right(starts, offset))', 'the token straddling the boundary counted as shared'),
    ('tui/context/cache/causes.py', '        if role in ("system", "developer"):\n            return CauseClass.SYSTEM_PROMPT', '        if role in ("developer",):\n            return CauseClass.SYSTEM_PROMPT', 'a system prompt edit reported as a message edit'),
    ('tui/context/cache/causes.py', 'if not _same(earlier.tools or None, current.tools or None)', 'if _same(earlier.tools or None, current.tools or None)', 'tool list changes not recognised'),
    ('tui/context/untrusted/fences.py', 'body, escaped = neutralise(trim(text, style), pattern)', 'body, escaped = (lambda r: (trim(r[0], style), r[1]))(neutralise(text, pattern))', 'escape applied before trimming'),
    ('tui/context/untrusted/fences.py', '"|": "¦", "｜": "¦"})', '"｜": "¦"})', "'|' left out of the look-alikes"),
    ('tui/context/untrusted/fences.py', 'RULE_BLOCK_SHAPE.format(ws=ws), CONTROL_SHAPES,', 'CONTROL_SHAPES,', 'rule blocks <<system id=..>> left unescaped'),
    ('tui/context/untrusted/fences.py', r'parts += [rf"<{ws}/?{ws}{tag_pattern}\b[^>\n]*+>?", ', 'parts += [', "the fence's own delimiter left unescaped"),
    ('tui/context/untrusted/fences.py', 'return re.compile("|".join(parts), re.IGNORECASE)', 'return re.compile("|".join(parts))', 'escaping is case-sensitive'),
    ('tui/context/untrusted/forged_blocks.py', 'if span.kind not in OWN_KINDS:', 'if span.kind == "content":', 'forged headers inside reasoning or tool calls not reported'),
    ('tui/context/request_fences.py', 'if style.enabled and not message.provenance.trusted and', 'if style.enabled and message.provenance.trusted and', 'trusted messages fenced, untrusted ones not'),
    ('tui/context/request_fences.py', '(body_end, span.end, "fence"))', '(body_end, span.end, "content"))', 'the fence footer counted as content'),
    ('tui/context/untrusted/fences.py', 'r"|\\[/?[A-Z][A-Z_]{2,30}\\]|\\[@[A-Z]+@\\]")', 'r"|\\[@[A-Z]+@\\]")', '[INST]-style markers left unescaped'),
    ])

# Entries may name their own tests (a fifth item): these are caught only by the visible() cases of the
# regression files, which sit behind a minute of the group's other tests.
VISIBLE_TESTS = ["tests/test_visible.py", "tests/test_attack_regressions.py", "tests/test_divergence.py"]

GROUPS["attribution, fences, visible, tokens"] = (
    ["tests/test_attribution_forgery.py", "tests/test_attribution_edges.py", "tests/test_fence_fuzz.py",
     "tests/test_visible.py", "tests/test_tokens.py", "tests/test_document.py", "tests/test_fences.py",
     "tests/test_attack_regressions.py", "tests/test_divergence.py"],
    [
    ('tui/context/document.py', '    while key in truth or any(key in text for text in inputs):', '    while False:', 'a sentinel key that occurs in the input is used anyway'),
    ('tui/context/attribution/marking.py', 'parts = re.split(re.escape(key) + f"([{OPEN}{CLOSE}])([0-9]{{1,9}}){END}", marked)', 'parts = re.split("[\\ue000-\\uf8ff]+" + f"([{OPEN}{CLOSE}])([0-9]{{1,9}}){END}", marked)', 'any private-use run is read as a sentinel (in-band, forgeable)'),
    ('tui/context/untrusted/fences.py', 'text = _label_drop().sub("", _LABEL_SPACE.sub(" ", str(value))).strip().translate(LABEL_LOOKALIKE)', 'text = str(value)', 'fence labels carried raw into the header and note'),
    ('tui/context/untrusted/fences.py', 'return text if len(text) <= limit else text[: limit - 1] + "…"', 'return text', 'fence labels not length-bounded'),
    ('tui/context/untrusted/fences.py', 'label = clean_label(source, pattern)', 'label = source', 'fence() skips cleaning the label'),
    ('tui/context/untrusted/fences.py', '\'"\': "\'",', '', 'quotes left in fence labels'),
    ('tui/context/untrusted/fences.py', '(?:bos|eos|unk|sep|pad|cls|mask|unused\\d+|extra_id_\\d+)', '(?:bos)', '<eos>, <pad>, <unk>... left live in fences'),
    ('tui/context/untrusted/fences.py', 'r"|</?[A-Za-z][A-Za-z0-9]*+(?:_[A-Za-z0-9]++)++>"', 'r"|</?(?:start|end)_of_turn>"', 'snake-case control tokens (<start_of_image>) left live'),
    ('tui/context/untrusted/fences.py', 'rf"<{ws}/?{ws}{tag_pattern}', 'rf"<{gap}/?{gap}{tag_pattern}', 'spaced fence delimiters (< /untrusted>) left unescaped'),
    ('tui/context/untrusted/fences.py', 'gap, ws = hidden_any(presentation=True) + "*+", hidden_any', 'gap, ws = "", hidden_any', 'a fence tag split by a zero-width character left unescaped'),
    ('tui/context/untrusted/fences.py', 'RULE_BLOCK_SHAPE.format(ws=ws), CONTROL_SHAPES,', 'RULE_BLOCK_SHAPE.format(ws=""), CONTROL_SHAPES,', 'spaced rule blocks (< <system>>) left unescaped'),
    ('tui/context/untrusted/fences.py', 'found = template_control_strings(template_source) | set(template_specials) | tokenizer_specials', 'found = set(template_specials)', 'fences escape only the hand-kept template specials'),
    ('tui/context/request_fences.py', 'return control_strings(template.source, tuple(template.special_strings()), all_special_tokens(tokenizer))', 'return frozenset(template.special_strings())', "build_request ignores the tokenizer's added tokens"),
    ('tui/context/tokens/tokenizers.py', '        return self._all\n', '        return frozenset(self._specials)\n', "harmony's reserved special tokens not listed"),
    ('tui/context/tokens/tokenizers.py', 'r"""\\p{N}{1,3}""", r""" ?[', 'r"""\\p{N}{1,4}""", r""" ?[', "o200k split pattern differs from tiktoken's"),
    ('tui/context/untrusted/visible.py', 'WHOLE_PLANES = ((0x40000, 0x10FFFF),)', 'WHOLE_PLANES = ((0xF0000, 0x10FFFF),)', 'visible() misses Unicode tag characters (plane 14 left out)'),
    ('tui/context/untrusted/visible.py', 'HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cn", "Co", "Cs", "Zl", "Zp"})', 'HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cn", "Co", "Cs"})', 'visible() misses line and paragraph separators (Zl, Zp)'),
    ('tui/context/untrusted/visible.py', 'HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cn", "Co", "Cs", "Zl", "Zp"})', 'HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cn", "Cs", "Zl", "Zp"})', 'visible() misses private-use characters of plane 0 (Co)'),
    ('tui/context/untrusted/visible.py', 'HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cn", "Co", "Cs", "Zl", "Zp"})', 'HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cn", "Co", "Zl", "Zp"})', 'visible() misses lone surrogates (Cs)'),
    # Added for the engine of 212d308: the new character class of visible(), marking, alignment, BPE pieces.
    ('tui/context/untrusted/visible.py', 'HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cn", "Co", "Cs", "Zl", "Zp"})', 'HIDDEN_CATEGORIES = frozenset({"Cc", "Cn", "Co", "Cs", "Zl", "Zp"})', 'visible() trusts Default_Ignorable for format characters (Cf left out: U+0600, U+FFF9, U+13430 pass)', VISIBLE_TESTS),
    ('tui/context/untrusted/visible.py', 'codes.update(range(low, min(high, SCANNED - 1) + 1))', 'codes.update(range(low, min(high, SCANNED - 1)))', 'visible() misses the last code point of each Default_Ignorable run (U+034F, U+3164, U+FFA0)', VISIBLE_TESTS),
    ('tui/context/untrusted/visible.py', 'HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cn", "Co", "Cs", "Zl", "Zp"})', 'HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Zl", "Zp"})', 'visible() misses unassigned code points (Cn: U+0378, U+FFFE)', VISIBLE_TESTS),
    ('tui/context/untrusted/visible.py', 'BLANKS = ((0x2800, 0x2800), (0x16FE4, 0x16FE4))', 'BLANKS = ()', 'visible() shows blank letters (U+2800, U+16FE4) as nothing', VISIBLE_TESTS),
    ('tui/context/attribution/marking.py', 'return size if size == len(chunk) or not STRUCTURE.fullmatch(chunk) else 0', 'return size', 'a cut marker-shaped chunk is claimed in part (the template\'s own text beside the cut)'),
    ('tui/context/attribution/marking.py', r'IDENTIFIER = re.compile(r"[\w.:/@+-]{1,64}")', r'IDENTIFIER = re.compile(r"\S{1,64}")', 'identifiers may hold brackets and bars: a short header-shaped name or id left unmarked'),
    ('tui/context/attribution/alignment.py', 'if following is not None and following[0] < hit[1] and first(unit + 1, hit[1]) is None:', 'if False:', 'search accepts a find that sits inside a later field'),
    ('tui/context/document.py', r'blanked += [truth[position:span.start], "\x00" * span.length]', 'blanked += [truth[position:span.start], truth[span.start:span.end]]', 'tool and variable fields not blanked: their text read as turn headers'),
    # Added for divergence.py (attribution that fails closed when the marked and true renders differ).
    ('tui/context/document.py', '    if exact:\n        return segments\n', '    if True:\n        return segments\n', 'divergent renders trusted like exact ones (a walk inside a copy reads as template text)'),
    ('tui/context/attribution/alignment.py', '    if back == front and until == at:\n        return ahead + behind[::-1], True', '    if back >= front:\n        return ahead + behind[::-1], True', 'alignment calls a walk exact that left a gap unexplained'),
    ('tui/context/attribution/divergence.py', 'if not done or len(copies) < expected or any(leaf.partial for leaf in same):', 'if not done or any(leaf.partial for leaf in same):', 'a string found fewer times than the marked render used it: its tokens still trusted'),
    ('tui/context/attribution/divergence.py', '    if escaped != core:\n', '    if False:\n', "JSON-escaped copies (tojson) of a marker-bearing string not claimed"),
    ('tui/context/attribution/divergence.py', 'if leaf.text.strip() and STRUCTURE.search(leaf.text):', 'if leaf.text.strip() and STRUCTURE.match(leaf.text):', 'only strings starting with a marker are claimed'),
    ('tui/context/attribution/divergence.py', 'if match.group(1).lower() in unsafe:', 'if match.group(1) in unsafe:', 'unsafe tokens compared by case (an upper-cased copy passes)'),
    ('tui/context/attribution/divergence.py', 'if not pieces and number not in claimed:', 'if not pieces:', 'a field of a claimed string moved out of its claim'),
    ('tui/context/document.py', 'message, kind = None, UNATTRIBUTED', 'message, kind = None, "marker"', "text found for no field counted as the template's own"),
    ('tui/context/tokens/tokenizers.py', r'_SAFE_CUT = re.compile(r"(?<=\S) ")', r'_SAFE_CUT = re.compile(r" ")', 'long text cut for tiktoken inside a run of spaces (tokens change)'),
    ])

GROUPS["client: SSE parser, key scoping, redaction, server data"] = (
    ["tests/test_client_hostile.py", "tests/test_key_scope.py", "tests/test_client.py", "tests/test_server_kinds.py"],
    [
    (('tui/client/sse.py', '        if length > self.max_line:', '        if False and length > self.max_line:', 'SSE parser: the line bound removed')),
    (('tui/client/sse.py', '            self._check(self._tail_length, "a line")\n', '', 'SSE parser: an unfinished line may grow without bound')),
    (('tui/client/endpoint.py', 'return self.has_key and self.key_allowed and origin_of(url) == self.origin', 'return self.has_key and self.key_allowed', 'key scope: the key goes to any origin (redirects, other ports)')),
    (('tui/client/endpoint.py', '    scheme = parts.scheme.lower()', '    scheme = ""', 'key scope: the scheme is not part of the origin (https key sent over http)')),
    (('tui/client/endpoint.py', '            self._key, self.key_withheld = None, True', '            self.key_withheld = True', 'key scope: a suggested address still holds the key')),
    (('tui/client/endpoint.py', '        return self.source in KEY_SOURCES', '        return True', 'key scope: every source may carry the key (session files too)')),
    (('tui/client/http.py', 'request.headers.update(self.endpoint.auth_headers(str(request.url), style))', 'request.headers.update(self.endpoint.auth_headers(None, style))', 'key scope: redirects carry the key')),
    (('tui/client/server_tokenizer.py', 'follow_redirects=False,', 'follow_redirects=True,', 'key scope: the server tokenizer follows redirects')),
    (('tui/context/untrusted/redaction.py', '        if not text or not self._forms:\n            return text', '        if True:\n            return text', 'redaction removed')),
    (('tui/context/untrusted/redaction.py', '    head = secret[:MIN_PREFIX]\n    if head not in text:', '    head = secret[:MIN_PREFIX]\n    if True:', 'redaction: a key quoted in part or cut off is left')),
    (('tui/client/errors.py', '        message = bounded(message)\n', '', 'error messages neither bounded nor made visible')),
    (('tui/client/http.py', 'raw = await self._read_bounded(response, self.limits.max_error, url, strict=False)', 'raw = await response.aread()', 'error bodies read whole')),
    (('tui/client/http.py', '    max_answer: int = 8 * MiB', '    max_answer: int = 8 * 1024 * MiB', 'JSON answers unbounded')),
    (('tui/client/stream.py', '                reader.count(len(raw))', '                reader.count(len(raw)); deadline.reschedule(loop.time() + idle)', 'keep-alives and trickled bytes count as progress')),
    (('tui/client/stream.py', '        added = self.assembler.apply(chunk)\n        if self.assembler.size > self.limits.max_reply:', '        added = self.assembler.apply(chunk)\n        if False:', 'a reply without a size bound')),
    (('tui/client/schemas.py', '    content: Text | None = None', '    content: Any = None', 'chunk content not type-checked')),
    (('tui/client/schemas.py', 'Context = Annotated[int, Meta(ge=1, le=MAX_CONTEXT)]', 'Context = int', 'context sizes not range-checked')),
    (('tui/client/schemas.py', '    data: Annotated[list[ModelEntry], Meta(max_length=MAX_MODELS)] = []', '    data: list[ModelEntry] = []', 'model list length unbounded')),
    (('tui/client/schemas.py', '    usage: Usage | None = None\n    timings', '    usage: Any = None\n    timings', 'usage not type-checked')),
    (('tui/client/server_tokenizer.py', '        except httpx.HTTPError as exc:\n            raise transport_error', '        except ValueError as exc:\n            raise transport_error', 'server tokenizer: httpx errors escape')),
    (('tui/client/server_tokenizer.py', '        if not self.usable():', '        if False:', 'server tokenizer: no back-off (the network is tried on every keystroke)')),
    (('tui/client/server_info.py', '    except (MalformedAnswer, TooLarge):\n        raise\n', '', 'probes swallow malformed answers')),
    ])

GROUPS["session files: schema, safe reading, atomic save, lock, exports"] = (
    ["tests/test_sessions.py", "tests/test_session_schema.py", "tests/test_session_hostile_files.py",
     "tests/test_cli_errors.py"],
    [
    (('tui/sessions/safe_io.py', '        os.replace(temp, path)', '        Path(path).write_text(text, encoding="utf-8")', 'atomic save writes the session in place (os.replace gone)')),
    (('tui/sessions/store.py', '            if self._still_linked(fd):', '            if True:', 'session lock taken on a lock file already removed (two writers)')),
    (('tui/sessions/store.py', 'fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)', 'fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)', 'session lock shared instead of exclusive')),
    (('tui/context/untrusted/outside_files.py', '        if not stat.S_ISREG(info.st_mode):', '        if False:', 'a FIFO or device read as a session file')),
    (('tui/context/untrusted/outside_files.py', 'os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY', 'os.O_RDONLY | os.O_NOCTTY', 'session files opened blocking (a FIFO hangs)')),
    (('tui/sessions/safe_io.py', '    if len(result) != len(pairs):', '    if False:', 'duplicated JSON keys accepted')),
    (('tui/context/untrusted/outside_files.py', '            if depth > MAX_DEPTH:', '            if False:', "nesting depth unbounded below the parser's own limit")),
    (('tui/context/untrusted/outside_files.py', 'abs(value) >= MAX_INT', 'abs(value) >= MAX_INT ** 9', 'huge integers accepted in free-form fields')),
    (('tui/sessions/schema.py', '    context_window: WindowSize | None = None', '    context_window: int | None = None', 'context_window unbounded')),
    (('tui/sessions/schema.py', '            conform(self.tool_calls, list[ToolCall], ".tool_calls")', '            pass', 'tool calls of the wrong shape accepted')),
    (('tui/sessions/schema.py', '        check_names(self.variables, ".variables")', '        pass', "template variables may collide with the engine's own arguments")),
    (('tui/sessions/parse.py', '    if format_ != FORMAT:', '    if False:', 'any JSON object with a version read as a session')),
    (('tui/sessions/session_template.py', '        template = builtin_template(name)', "        template = __import__('tui.context.templates.library').context.templates.library.load_template(origin[5:]) if origin.startswith('file:') else builtin_template(name)", "a session's template origin path is read")),
    (('tui/sessions/replay.py', '        matches = bool(record.document_hash) and', '        matches = not record.document_hash or', 'replay --check passes a record without a hash')),
    (('tui/commands/export.py', '            write_private(Path(args.output).expanduser(), text)', '            Path(args.output).expanduser().write_text(text, encoding="utf-8")', 'exports written with the umask mode, not 0600')),
    (('tui/cli.py', '{one_line(message)}', '{message}', 'error lines carry raw newlines and terminal escapes')),
    ])

GROUPS["template sandbox: deadline, memory ceiling, sizes, depth, attributes"] = (
    ["tests/test_template_limits.py", "tests/test_template_format_map_and_replace.py",
     "tests/test_templates_conformance.py", "tests/test_builtin_templates.py"],
    [
    ('tui/context/templates/limits.py', '        watch.fired_at = now\n        _raise_in_thread(watch.thread_id, Interrupted)', '        watch.fired_at = now\n        if watch.reason == "memory":\n            _raise_in_thread(watch.thread_id, Interrupted)', 'deadline not enforced: a timeout is noted but only a memory overrun interrupts the render'),
    ('tui/context/templates/limits.py', '            if watch.reason is not None:\n                _clear_in_thread(watch.thread_id, None)', '            if False:\n                _clear_in_thread(watch.thread_id, None)', 'an interrupt fired as the render ended is not cleared: it lands later, in the caller'),
    ('tui/context/templates/limits.py', 'return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")', 'return int(statm.read().split()[1])', 'memory ceiling off by the page size: resident pages read as bytes'),
    ('tui/context/templates/limits.py', '    if watch.reason == "memory":\n        return "MemoryLimit"', '    if limits.max_memory:\n        return "MemoryLimit"', 'a timeout reported as MemoryLimit whenever a memory ceiling is set'),
    ('tui/context/templates/hf_render.py', '            ZeroDivisionError, OverflowError) as exc:', '            ZeroDivisionError, OverflowError, RecursionError, MemoryError) as exc:', 'MemoryError and RecursionError mapped to a plain render error, not a TemplateLimitError'),
    ('tui/context/templates/sandbox.py', '            if budget.depth > budget.limits.max_depth:', '            if budget.depth > 100 * budget.limits.max_depth:', 'macro depth bound off by a factor of 100'),
    ('tui/context/templates/sandbox.py', '    "batch": check_count("linecount", 1),\n', '', 'the batch filter not sized before it fills'),
    ('tui/context/templates/sandbox.py', '"join": check_join, "replace": check_replace,', '"join": check_join,', 'the replace filter not sized before it runs'),
    ('tui/context/templates/hf_render.py', '        if str(name).startswith("_"):', '        if str(name).startswith("__"):', 'namespace() accepts attribute names with one leading underscore'),
    ('tui/context/templates/sandbox.py', 'not in ("format", "format_map"):  # every attribute', 'not in ("format",):  # every attribute', 'str.format_map neither sandboxed nor sized (attributes reachable through a format string)'),
    ('tui/context/templates/limits.py', 'cls.size = min(cls.size, limits.max_chars, limits.max_items)', 'cls.size = min(cls.size, limits.max_chars)', 'the unchecked size floor ignores max_items: lists past the limit pass'),
    ('tui/context/templates/hf_render.py', '    if len(source) > limits.max_source:', '    if len(source) > limits.max_chars:', 'the template text measured against max_chars, not max_source'),
    ])

GROUPS["app: the one way to the screen, key scope, counting, summaries"] = (
    ["tests/test_hostile_sinks.py", "tests/test_app_key_scope.py", "tests/test_app_summary.py",
     "tests/test_budget.py", "tests/test_summary_budget.py"],
    [
    ("tui/app/shown.py", "    return visible(text)\n\n\ndef one_line", "    return text\n\n\ndef one_line",
     "outside text reaches widgets without visible()"),
    ("tui/app/app.py", "severity=severity, timeout=timeout, markup=False)\n",
     "severity=severity, timeout=timeout, markup=True)\n", "notifications parse markup"),
    ("tui/app/shown.py", "segments = [Segment(one_cell(s.text), s.style, s.control)",
     "segments = [Segment(s.text, s.style, s.control)", "editors draw raw control characters"),
    ("tui/controller/link.py", "        endpoint = endpoint_for(base, source, self.settings.model",
     "        endpoint = endpoint_for(base, 'flag', self.settings.model", "the key goes to a URL named in a session file"),
    ("tui/app/shown.py", "    return [value if isinstance(value, Text) else shown_line(value, limit=limit) for value in values]",
     "    return [value for value in values]", "table cells parsed as markup"),
    ("tui/context/request.py", "    if untrusted and style.enabled:", "    if False:",
     "a summary of untrusted turns sent unfenced"),
    ("tui/context/policy/summary_call.py", "        if message.provenance.trusted:\n", "        if True:\n",
     "the summary call gets untrusted turns unfenced"),
    ("tui/app/themes.py", "    if not re.fullmatch(", "    if False and not re.fullmatch(",
     "theme names from files reach the palette unchecked"),
    ])

# The curated policy (issue 24): its tie rule, trimming, supersede step, pinned budget and order.
GROUPS["curated policy"] = (
    ["tests/test_curated_policy.py"],
    [
    ('tui/context/policy/curated.py', 'key=lambda u: (-unit_scores[id(u)], -u[-1]))', 'key=lambda u: (-unit_scores[id(u)], u[-1]))', 'a tie goes to the oldest'),
    ('tui/context/policy/curated.py', '            ranges.append((n + 1, n + 1))', '            ranges.append((n, n + 1))', 'trimming keeps the line before each relevant one (off by one)'),
    ('tui/context/policy/curated.py', '        out += lines[first - 1:last]', '        out += lines[first:last]', 'trimming drops the first relevant line of each run (off by one)'),
    ('tui/context/policy/curated.py', '            newest[item.key] = p', '            newest.setdefault(item.key, p)', 'the oldest version supersedes the newer'),
    ('tui/context/policy/curated.py', 'room = None if budget is None else budget - overhead - pinned_tokens', 'room = None if budget is None else budget - overhead', 'the pinned items left out of the budget'),
    ('tui/context/policy/curated.py', '        return sorted(e.index for e in self.entries if e.verdict not in (Verdict.SUPERSEDED, Verdict.DROPPED))', '        return [e.index for e in sorted(self.entries, key=lambda e: -e.score) if e.verdict not in (Verdict.SUPERSEDED, Verdict.DROPPED)]', 'kept items sent in rank order, not the conversation\'s'),
    ('tui/context/request.py', '        wire, fenced, fence_infos = fence_messages(sent, settings.fences, escapes)  # trimmed, then fenced', '        wire, fenced, fence_infos = fence_messages(messages, settings.fences, escapes)', 'the untrimmed items sent'),
    ])
