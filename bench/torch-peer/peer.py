"""The PyTorch + peft peer of turnstream's LoRA step (bench/model.ts), on CPU.

The same step as turnstream's learner on one sample of T tokens, the second half of them the
response: a forward pass over all T tokens, log-probs of the response tokens (logits only at the
positions that predict them), the PPO-clipped per-token loss with advantage 1, backward,
global-norm gradient clipping at 1, one AdamW step; LoRA rank 8, alpha 16 on q/k/v/o of every
layer. Prints one JSON line on stdout; everything else goes to stderr.

    python peer.py --model PATH.gguf [--tokens 128,256] [--steps 3] [--threads N]
                   [--weights auto|gguf|random]
"""

import argparse
import json
import os
import resource
import statistics
import sys
import time

# No hub: the model is a local file, and nothing else may be fetched.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TQDM_DISABLE", "1")

CLIP_LOW = 0.2
CLIP_HIGH = 0.28
MAX_GRAD_NORM = 1.0


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="a llama-architecture GGUF file")
    p.add_argument("--tokens", default="128,256", help="sequence lengths, comma-separated")
    p.add_argument("--steps", type=int, default=3, help="timed steps per size (after one warm-up)")
    p.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    p.add_argument(
        "--weights",
        choices=["auto", "gguf", "random"],
        default="auto",
        help="gguf: the file's weights, dequantized by transformers; random: random weights of the "
        "shapes in the file's header; auto: gguf, or random where transformers cannot load it",
    )
    a = p.parse_args()
    a.tokens = [int(t) for t in a.tokens.split(",") if t.strip()]
    if not a.tokens or any(t < 4 for t in a.tokens):
        p.error("--tokens: whole numbers >= 4, comma-separated")
    if a.steps < 1:
        p.error("--steps: at least 1")
    return a


def config_from_header(path):
    """A LlamaConfig with the shapes a llama GGUF's header gives."""
    from gguf import GGUFReader
    from transformers import LlamaConfig

    reader = GGUFReader(path)
    fields = reader.fields

    def field(key, default=None):
        return fields[key].contents() if key in fields else default

    arch = field("general.architecture")
    if arch != "llama":
        raise ValueError(f"random weights are built for llama GGUFs only, this one is {arch}")
    names = {t.name for t in reader.tensors}
    hidden = int(field("llama.embedding_length"))
    heads = int(field("llama.attention.head_count"))
    return LlamaConfig(
        vocab_size=len(field("tokenizer.ggml.tokens")),
        hidden_size=hidden,
        intermediate_size=int(field("llama.feed_forward_length")),
        num_hidden_layers=int(field("llama.block_count")),
        num_attention_heads=heads,
        num_key_value_heads=int(field("llama.attention.head_count_kv", heads)),
        head_dim=int(field("llama.attention.key_length", hidden // heads)),
        max_position_embeddings=int(field("llama.context_length", 2048)),
        rms_norm_eps=float(field("llama.attention.layer_norm_rms_epsilon", 1e-5)),
        rope_theta=float(field("llama.rope.freq_base", 10000.0)),
        tie_word_embeddings="output.weight" not in names,
    )


def load_model(path, weights):
    """(model, how the weights were had): transformers' GGUF loader, or random weights."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    if weights != "random":
        try:
            model = AutoModelForCausalLM.from_pretrained(
                os.path.dirname(os.path.abspath(path)) or ".",
                gguf_file=os.path.basename(path),
                dtype=torch.float32,
            )
            return model, "gguf-dequantized"
        except Exception as err:  # noqa: BLE001 - any loader failure falls back when asked to
            if weights == "gguf":
                raise
            print(f"peer.py: transformers could not load {path} ({err}); random weights", file=sys.stderr)
    torch.manual_seed(0)
    return LlamaForCausalLM(config_from_header(path)).to(torch.float32), "random"


def main():
    args = parse_args()
    if not os.path.isfile(args.model):
        raise FileNotFoundError(f"no model file at {args.model}")
    import peft
    import torch
    import transformers

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    base, weights = load_model(args.model, args.weights)
    config = base.config
    lora = peft.LoraConfig(
        r=8,
        lora_alpha=16,
        lora_dropout=0.0,
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
        bias="none",
        task_type="CAUSAL_LM",
    )
    model = peft.get_peft_model(base, lora)
    model.train()
    trainable = [p for p in model.parameters() if p.requires_grad]
    lora_parameters = sum(p.numel() for p in trainable)
    # turnstream's AdamW: betas 0.9/0.98, epsilon 1e-8, decoupled weight decay 0.1.
    opt = torch.optim.AdamW(trainable, lr=1e-5, betas=(0.9, 0.98), eps=1e-8, weight_decay=0.1)
    vocab = min(int(config.vocab_size), 30_000)

    def step(ids, prompt):
        response = ids.shape[1] - prompt
        opt.zero_grad(set_to_none=True)
        # The logits at the last response+1 positions; the first `response` of them predict the
        # response tokens (turnstream computes logits only at those positions too).
        logits = model(input_ids=ids, logits_to_keep=response + 1).logits[:, :-1, :]
        logp = torch.log_softmax(logits.float(), dim=-1).gather(-1, ids[:, prompt:].unsqueeze(-1)).squeeze(-1)
        ratio = torch.exp(logp - logp.detach())
        adv = torch.ones_like(ratio)
        per_token = torch.maximum(-ratio * adv, -torch.clamp(ratio, 1 - CLIP_LOW, 1 + CLIP_HIGH) * adv)
        loss = per_token.mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, MAX_GRAD_NORM)
        opt.step()

    step_s, step_cpu_s, forward_tps = {}, {}, {}
    for T in args.tokens:
        ids = torch.tensor([[(i * 7919 + 13) % vocab for i in range(T)]], dtype=torch.long)
        prompt = T // 2
        model.eval()
        with torch.inference_mode():
            model(input_ids=ids, logits_to_keep=1)  # warm-up
            walls = []
            for _ in range(args.steps):
                t0 = time.perf_counter()
                model(input_ids=ids, logits_to_keep=1)
                walls.append(time.perf_counter() - t0)
        forward_tps[str(T)] = round(T / statistics.median(walls), 1)
        model.train()
        step(ids, prompt)  # warm-up
        walls, cpus = [], []
        for i in range(args.steps):
            w0, c0 = time.perf_counter(), time.process_time()
            step(ids, prompt)
            walls.append(time.perf_counter() - w0)
            cpus.append(time.process_time() - c0)
            print(f"peer.py: T={T} step {i + 1}/{args.steps}: {walls[-1]:.3f} s", file=sys.stderr)
        step_s[str(T)] = round(statistics.median(walls), 4)
        step_cpu_s[str(T)] = round(statistics.median(cpus), 4)

    result = {
        "name": f"pytorch {torch.__version__} + peft {peft.__version__} (cpu)",
        "torch": torch.__version__,
        "peft": peft.__version__,
        "transformers": transformers.__version__,
        "threads": torch.get_num_threads(),
        "weights": weights,
        "lora_parameters": lora_parameters,
        "steps": args.steps,
        "lora_step_s": step_s,
        "lora_step_cpu_s": step_cpu_s,
        "forward_tokens_per_s": forward_tps,
        # ru_maxrss is KiB on Linux.
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        raise
    except BaseException as err:  # noqa: BLE001 - reported as the last stderr line, for the caller
        import traceback

        traceback.print_exc(file=sys.stderr)
        print(f"peer.py: {type(err).__name__}: {err}".splitlines()[0], file=sys.stderr)
        sys.exit(1)
