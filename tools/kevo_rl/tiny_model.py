"""A tiny randomly initialised causal LM with a byte-level tokenizer, saved as a Hugging Face model
folder: what the tests and the GPU check serve and train, since nothing can be downloaded there.

    python3 tools/kevo_rl/tiny_model.py OUT_DIR [--layers 2] [--hidden 64] [--seed 0]

Every byte is a token (256 of them) plus <s>, </s> and <pad>, so any text round-trips; the chat
template is kevo_rl.chat's fallback layout.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from kevo_rl import deps  # noqa: E402
from kevo_rl.chat import FALLBACK_TEMPLATE  # noqa: E402


def byte_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()  # the 256 printable stand-ins for bytes
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    for special in ("<s>", "</s>", "<pad>"):
        vocab[special] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                   clean_up_tokenization_spaces=False)
    fast.chat_template = FALLBACK_TEMPLATE
    return fast


def build(out_dir, layers=2, hidden=64, heads=4, seed=0):
    """Writes the model and its tokenizer to `out_dir`; returns (model, tokenizer)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = byte_tokenizer()
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads,
                         max_position_embeddings=8192, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                         tie_word_embeddings=False)
    model = LlamaForCausalLM(config)
    os.makedirs(out_dir, exist_ok=True)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return model, tokenizer


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    why = deps.missing()
    if why:
        print("tiny_model: " + why, file=sys.stderr)
        return 2
    build(a.out, a.layers, a.hidden, a.heads, a.seed)
    print("tiny_model: wrote %s" % a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
