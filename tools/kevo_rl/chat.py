"""Prompt and completion tokens, the same in the server that samples and the trainer that learns.

A chat is rendered by the tokenizer's own chat template (the one vLLM applies); a tokenizer
without one gets a plain "role: content" layout. `max_prompt_tokens` keeps the prompt's last tokens
(kevo's prompts end with the rules of the reply, which matter most); both sides must use the same
value, or the trainer scores completions under a context the sampler did not see.
"""

FALLBACK_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def prompt_ids(tokenizer, messages, max_prompt_tokens=0):
    """Token ids of the chat `messages` (a list of {role, content}) ready for the reply."""
    template = getattr(tokenizer, "chat_template", None) or FALLBACK_TEMPLATE
    ids = tokenizer.apply_chat_template(messages, chat_template=template, add_generation_prompt=True, tokenize=True)
    ids = list(ids)
    if max_prompt_tokens and len(ids) > max_prompt_tokens:
        ids = ids[-max_prompt_tokens:]
    return ids


def completion_ids(tokenizer, text, max_completion_tokens=0):
    """Token ids of a completion as the model would have produced it: the text, then end of sequence."""
    ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])
    if max_completion_tokens and len(ids) > max_completion_tokens:
        return ids[:max_completion_tokens]  # cut by the length limit: no end of sequence was sampled
    if tokenizer.eos_token_id is not None:
        ids.append(tokenizer.eos_token_id)
    return ids
