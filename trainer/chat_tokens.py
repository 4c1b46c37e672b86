"""Chat-template tokens of a multi-turn episode: the first prompt, injected suffixes, revealed-tool blocks.

Why a class of its own: what the loss trains on must be token-for-token what the model saw. The
prompt is rendered once; every later message (tool results, the next user turn, template glue) is
appended as the *suffix* the template puts after a finished assistant turn, computed by TRL's
prefix diff (``_get_tool_suffix_ids``) generalised to any messages. A template that is not
prefix-preserving is refused (TRL's training variant of the template is used instead, see
``trainer.grpo.chat_tokenizer``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from envs.policies import _for_template


class ChatTokenizer:
    """Renders prompts and injected suffixes with the policy's chat template.

    ``suffix_ids`` is TRL's prefix diff generalised to any new messages (tool results, user
    turns): the dummy assistant turn before them is closed at its last EOS, exactly where a
    model turn that ended with EOS stops, so ``trace + suffix`` equals the rendered conversation.
    """

    def __init__(self, tokenizer: Any, chat_template: str | None = None, template_kwargs: dict | None = None):
        self.tokenizer = tokenizer
        self.chat_template = chat_template
        self.template_kwargs = dict(template_kwargs or {})
        self.eos_token_id = tokenizer.eos_token_id
        self.eos_token = tokenizer.eos_token

    def _text(self, messages: list[dict], tools: list[dict] | None) -> str:
        return self.tokenizer.apply_chat_template(
            messages, tools=tools or None, add_generation_prompt=False, tokenize=False,
            chat_template=self.chat_template, **self.template_kwargs,
        )

    def tools_message(self, tools: list[dict]) -> dict:
        """A system message whose content is the template's own tool block for ``tools``.

        Rendered generically: the text the template puts before the first user message with
        ``tools``, minus the template's system-message frame (found by rendering a marker system
        message). For Qwen3 that is ``# Tools ... <tools>{schemas}</tools> ...``, the block of the
        first prompt.
        """
        user = [{"role": "user", "content": "\x00u"}]
        with_tools = self._text(user, tools)
        marked = self._text([{"role": "system", "content": "\x00s"}, *user], None)
        tail = len(_common_suffix(with_tools, marked))
        block, frame = with_tools[: len(with_tools) - tail], marked[: len(marked) - tail]
        head, _, foot = frame.partition("\x00s")
        if not (block.startswith(head) and block.endswith(foot)) or len(block) <= len(head) + len(foot):
            schemas = "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
            return {"role": "system", "content": f"More functions are available:\n<tools>\n{schemas}\n</tools>"}
        return {"role": "system", "content": block[len(head): len(block) - len(foot)]}

    def _render(self, messages: list[dict], tools: list[dict] | None, generation_prompt: bool) -> list[int]:
        ids = self.tokenizer.apply_chat_template(
            _for_template(messages), tools=tools or None, add_generation_prompt=generation_prompt, tokenize=True,
            return_dict=False, chat_template=self.chat_template, **self.template_kwargs,
        )
        return list(ids)

    def prompt_ids(self, messages: list[dict], tools: list[dict] | None) -> list[int]:
        return self._render(messages, tools, generation_prompt=True)

    def suffix_ids(self, new_messages: list[dict]) -> list[int]:
        """Tokens the template puts after a finished assistant turn for ``new_messages``."""
        first_tool = next((m for m in new_messages if m.get("role") == "tool"), None)
        calls = [{"type": "function", "function": {"name": first_tool.get("name", "tool"), "arguments": {}}}] \
            if first_tool is not None else None
        assistant: dict[str, Any] = {"role": "assistant", "content": ""}
        if calls and new_messages[0].get("role") == "tool":
            assistant["tool_calls"] = calls
        dummy = [{"role": "user", "content": "dummy"}, assistant]
        prefix = self._render(dummy, None, generation_prompt=False)
        full = self._render(dummy + list(new_messages), None, generation_prompt=True)
        eos = [i for i, t in enumerate(prefix) if t == self.eos_token_id]
        if eos:
            prefix = prefix[: eos[-1] + 1]
        if full[: len(prefix)] != prefix:
            raise ValueError("chat template is not prefix-preserving: cannot compute injected suffix tokens")
        return full[len(prefix):]

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=False)



def _common_suffix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[len(a) - 1 - n] == b[len(b) - 1 - n]:
        n += 1
    return a[len(a) - n:]
