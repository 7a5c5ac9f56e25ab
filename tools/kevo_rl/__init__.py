"""kevo_rl: the RL loop around kevo's llm policy.

One concern per module: `deps` (the pinned Python packages and where setup.sh puts them),
`tiny_model` (a small randomly initialised causal LM with a byte-level tokenizer, built
locally: no download), `samples` (kevo's completions with their rewards, from the campaign file
or its JSONL export, grouped as GRPO groups), `grpo` (the clipped-ratio update of a LoRA adapter
with a KL penalty to the reference model), `chat` (prompt rendering shared by the trainer and the
server), `serve_hf` (an OpenAI-compatible server around transformers + PEFT) and `reward_client`
(kevo serve's /v1/evaluate as a TRL-style reward function).
"""
