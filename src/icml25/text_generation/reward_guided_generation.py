"""FaRMA: a one-call, all-candidates reward model for reward-guided text generation (Rashid, Wu, Fan, Li,
Kristiadi & Poupart, "Towards Cost-Effective Reward Guided Text Generation", ICML 2025, arXiv:2502.04517).

The reward model (RM) has a vocabulary-sized head, like an LM head: one forward pass on a prefix scores every
next token, ``r(x, y_{<i})[v]`` = score of the expanded sequence ``(x, y_{<i}, v)`` (Sec. 3). A sequence's score
is ``s(x, y_{<=i}) = r(x, y_{<i})[y_i]``. It is trained with a Bradley-Terry loss on full sequences and a
max-consistency loss on prefixes, ``s(y_{<=i}) = max_v r(y_{<=i})[v]`` (Sec. 3.2), so that a prefix's score is
the reward of its best completion. Decoding adds ``beta * r`` to the LM logits: one LM and one RM call per
token. Baselines: ARGS (a scalar RM called on each of the LM's top-k candidates: k RM calls per token), a
PARGS-style prefix RM (BT on equal-length prefixes), best-of-N and DPO.

Conventions: token ids are ``LongTensor [B, L]``; prompts are equal length (BOS alone is allowed); a model is
any ``nn.Module`` whose forward maps ids to logits ``[B, L, V]`` (a tensor, or an output with ``.logits`` such as
a Hugging Face causal LM). No KV cache: each step re-reads the whole prefix.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from icml25.utils.random import Seed, init_rng, torch_generator
from icml25.utils.validation import check_bool, check_choice, check_instance, check_scalar, check_tensor

MODES = ("topk-sample", "greedy")
SCHEDULES = ("alternate", "joint")


def _logits(out: Any) -> torch.Tensor:
    return out.logits if hasattr(out, "logits") else out


def _ids(ids: Any, name: str, max_len: int | None = None, min_len: int = 1) -> torch.Tensor:
    ids = check_tensor(ids, name, ndim=2)
    if ids.dtype != torch.long:
        raise TypeError(f"{name} must be a LongTensor of token ids, got dtype {ids.dtype}")
    if ids.shape[0] == 0 or ids.shape[1] < min_len:
        raise ValueError(f"{name} must hold at least one row of >= {min_len} tokens, got shape {tuple(ids.shape)}")
    if bool((ids < 0).any()):
        raise ValueError(f"{name} must hold non-negative token ids, got min {int(ids.min())}")
    if max_len is not None and ids.shape[1] > max_len:
        raise ValueError(f"{name} has length {ids.shape[1]} > the model's max_len {max_len}")
    return ids


def _eos(eos_id: Any) -> int | None:
    return None if eos_id is None else check_scalar(eos_id, "eos_id", "int", min=0)


class TinyCausalLM(nn.Module):
    """A small causal (pre-norm) transformer LM: ``forward(ids) -> logits [B, L, V]``.

    Parameters
    ----------
    vocab_size, dim, n_layers, n_heads, max_len : vocabulary, width, depth, heads and longest sequence.
    seed : seeds the initialisation (normal, std 0.02); torch's global RNG is left untouched.
    """

    def __init__(self, vocab_size: int, dim: int = 64, n_layers: int = 2, n_heads: int = 4, max_len: int = 16,
                 seed: Seed = 0) -> None:
        super().__init__()
        self.vocab_size = check_scalar(vocab_size, "vocab_size", "int", min=2)
        dim = check_scalar(dim, "dim", "int", min=1)
        n_layers = check_scalar(n_layers, "n_layers", "int", min=1)
        n_heads = check_scalar(n_heads, "n_heads", "int", min=1)
        if dim % n_heads:
            raise ValueError(f"dim must be divisible by n_heads, got dim={dim} and n_heads={n_heads}")
        self.max_len = check_scalar(max_len, "max_len", "int", min=1)
        with init_rng(seed):
            self.tok = nn.Embedding(self.vocab_size, dim)
            self.pos = nn.Embedding(self.max_len, dim)
            layer = nn.TransformerEncoderLayer(dim, n_heads, 4 * dim, dropout=0.0, batch_first=True,
                                               norm_first=True)
            self.blocks = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, self.vocab_size)
            for p in self.parameters():
                if p.dim() > 1:
                    nn.init.normal_(p, std=0.02)

    def hidden(self, ids: torch.Tensor) -> torch.Tensor:
        """Final hidden states ``[B, L, dim]`` of ``ids`` ``[B, L]``."""
        ids = _ids(ids, "ids", self.max_len)
        if int(ids.max()) >= self.vocab_size:
            raise ValueError(f"ids must lie in [0, {self.vocab_size}), got max {int(ids.max())}")
        L = ids.shape[1]
        mask = torch.ones(L, L, dtype=torch.bool, device=ids.device).triu(1)
        h = self.tok(ids) + self.pos(torch.arange(L, device=ids.device))
        return self.norm(self.blocks(h, mask=mask, is_causal=True))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Next-token logits ``[B, L, V]``."""
        return self.head(self.hidden(ids))


class FaRMARewardModel(nn.Module):
    """The all-candidates RM (Sec. 3): ``scores(prefix) -> [B, V]``, one call scores every next token.

    ``backbone`` is a causal LM (e.g. a :class:`TinyCausalLM` or a ``transformers`` ``GPT2LMHeadModel``);
    its LM head is the reward head, so initialising from the base LM is ``FaRMARewardModel(deepcopy(lm))``.
    """

    def __init__(self, backbone: nn.Module) -> None:
        super().__init__()
        self.backbone = check_instance(backbone, "backbone", nn.Module)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """``r(ids_{<=j})[v]`` at every position ``j``: ``[B, L, V]``."""
        return _logits(self.backbone(_ids(ids, "ids")))

    def scores(self, prefix_ids: torch.Tensor) -> torch.Tensor:
        """Score of every one-token expansion of each prefix, ``[B, V]``; non-finite scores raise."""
        out = self(_ids(prefix_ids, "prefix_ids"))[:, -1]
        if not bool(torch.isfinite(out).all()):
            raise ValueError("the reward model gave non-finite scores for prefix_ids")
        return out

    def sequence_score(self, ids: torch.Tensor, eos_id: int | None = None) -> torch.Tensor:
        """``s(y) = r(y_{<n})[y_n]`` of sequences ``ids`` ``[B, L]`` (``L >= 2``, position 0 the prompt/BOS):
        ``n`` is the last position, or the first ``eos_id`` after position 0 when one is given. ``[B]``."""
        ids = _ids(ids, "ids", min_len=2)
        eos_id = _eos(eos_id)
        r = self(ids[:, :-1])
        last = torch.full((len(ids),), ids.shape[1] - 1, device=ids.device)
        if eos_id is not None:
            is_eos = ids[:, 1:] == eos_id
            last = torch.where(is_eos.any(1), is_eos.int().argmax(1) + 1, last)
        rows = torch.arange(len(ids), device=ids.device)
        return r[rows, last - 1, ids[rows, last]]


class ScalarRewardModel(nn.Module):
    """A scalar-output RM for the baselines (ARGS, PARGS, best-of-N): ``forward(ids) -> [B]``, a linear value
    head on the last hidden state of a :class:`TinyCausalLM` backbone; ``seed`` seeds the head."""

    def __init__(self, backbone: TinyCausalLM, seed: Seed = 0) -> None:
        super().__init__()
        self.backbone = check_instance(backbone, "backbone", TinyCausalLM)
        with init_rng(seed):
            self.value = nn.Linear(backbone.head.in_features, 1)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Scalar score of each sequence, ``[B]``."""
        return self.value(self.backbone.hidden(ids)[:, -1]).squeeze(-1)


@dataclass
class CallStats:
    """Cost of one generation: LM forwards, RM forwards, sequences the RM scored, tokens, wall seconds."""

    lm_calls: int = 0
    rm_calls: int = 0
    rm_sequences: int = 0
    tokens: int = 0
    seconds: float = 0.0

    @property
    def rm_calls_per_token(self) -> float:
        return self.rm_calls / max(self.tokens, 1)


def bt_loss(chosen_scores: torch.Tensor, rejected_scores: torch.Tensor, margin: float = 0.0,
            center_coef: float = 0.0) -> torch.Tensor:
    """Bradley-Terry loss ``mean(-log sigma(s_w - s_l - margin)) + c mean((s_w + s_l)^2)`` (Sec. 3.2; the
    centring term is TRL's ``center_rewards_coefficient``)."""
    chosen_scores = check_tensor(chosen_scores, "chosen_scores", ndim=1, floating=True, finite=True)
    if len(chosen_scores) == 0:
        raise ValueError("chosen_scores must hold at least one pair, got an empty tensor")
    rejected_scores = check_tensor(rejected_scores, "rejected_scores", ndim=1, floating=True,
                                   shape=tuple(chosen_scores.shape), finite=True)
    margin = check_scalar(margin, "margin", "real")
    center_coef = check_scalar(center_coef, "center_coef", "real", min=0.0)
    loss = -F.logsigmoid(chosen_scores - rejected_scores - margin).mean()
    return loss + center_coef * ((chosen_scores + rejected_scores) ** 2).mean()


def max_consistency_loss(rm: FaRMARewardModel, sequences: torch.Tensor, min_prefix: int = 1,
                         detach_target: bool = False, eos_id: int | None = None) -> torch.Tensor:
    """Max-consistency residual ``mean_i (s(y_{<=i}) - max_v r(y_{<=i})[v])^2`` (Sec. 3.2) over the prefixes of
    ``sequences`` ``[B, L]`` (position 0 the prompt/BOS) with ``>= min_prefix`` response tokens. The last token,
    and any prefix that already holds ``eos_id``, has no target (the BT score is its anchor). Gradients flow
    through both sides as in the reference; ``detach_target=True`` is the TD-style variant."""
    check_instance(rm, "rm", FaRMARewardModel)
    min_prefix = check_scalar(min_prefix, "min_prefix", "int", min=1)
    sequences = _ids(sequences, "sequences", min_len=min_prefix + 2)
    detach_target = check_bool(detach_target, "detach_target")
    eos_id = _eos(eos_id)
    r = rm(sequences[:, :-1])
    s = r[:, :-1].gather(2, sequences[:, 1:-1, None]).squeeze(2)
    target = r[:, 1:].max(-1).values
    if detach_target:
        target = target.detach()
    keep = torch.zeros_like(s, dtype=torch.bool)
    keep[:, min_prefix - 1:] = True
    if eos_id is not None:
        keep &= (sequences[:, 1:-1] == eos_id).cumsum(1) == 0
    if not bool(keep.any()):
        return (s * 0.0).sum()
    return ((s - target) ** 2)[keep].mean()


def _batches(n: int, batch_size: int, gen: torch.Generator) -> list[torch.Tensor]:
    perm = torch.randperm(n, generator=gen)
    return [perm[i:i + batch_size] for i in range(0, n, batch_size)]


def _pairs(chosen: Any, rejected: Any) -> tuple[torch.Tensor, torch.Tensor]:
    chosen = _ids(chosen, "chosen", min_len=2)
    rejected = _ids(rejected, "rejected", min_len=2)
    if rejected.shape != chosen.shape:
        raise ValueError(f"rejected must have the shape of chosen {tuple(chosen.shape)}, got {tuple(rejected.shape)}")
    keep = (chosen != rejected).any(1)
    if not bool(keep.any()):
        raise ValueError("chosen and rejected must differ in at least one pair")
    return chosen[keep], rejected[keep]


def _lr_batch(lr: Any, batch_size: Any) -> tuple[float, int]:
    return (check_scalar(lr, "lr", "real", min=0.0, inclusive="neither"),
            check_scalar(batch_size, "batch_size", "int", min=1))


def _step(opt: torch.optim.Optimizer, loss: torch.Tensor) -> float:
    opt.zero_grad()
    loss.backward()
    opt.step()
    return float(loss.detach())


def train_farma(rm: FaRMARewardModel, chosen: torch.Tensor, rejected: torch.Tensor, rounds: int = 7,
                lr: float = 1e-3, batch_size: int = 128, schedule: str = "alternate", lam: float = 1.0,
                min_prefix: int = 1, detach_target: bool = False, margin: float = 0.0, center_coef: float = 0.0,
                eos_id: int | None = None, seed: Seed = 0) -> list[float]:
    """Train FaRMA in place (Sec. 3.2) with AdamW on preference pairs ``chosen`` / ``rejected`` ``[N, L]``.

    ``schedule="alternate"`` (the reference): ``rounds`` x (one BT epoch on the full pairs, then one
    max-consistency epoch on the prefixes of the chosen responses); ``"joint"``: ``rounds`` epochs of
    ``L_BT + lam * L_max``. Identical pairs are dropped. Returns the mean loss of every epoch (phase).
    """
    check_instance(rm, "rm", FaRMARewardModel)
    chosen, rejected = _pairs(chosen, rejected)
    rounds = check_scalar(rounds, "rounds", "int", min=1)
    lr, batch_size = _lr_batch(lr, batch_size)
    schedule = check_choice(schedule, "schedule", SCHEDULES)
    lam = check_scalar(lam, "lam", "real", min=0.0)
    min_prefix = check_scalar(min_prefix, "min_prefix", "int", min=1, max=chosen.shape[1] - 2)
    detach_target = check_bool(detach_target, "detach_target")
    eos_id = _eos(eos_id)
    margin = check_scalar(margin, "margin", "real")
    center_coef = check_scalar(center_coef, "center_coef", "real", min=0.0)
    gen = torch_generator(seed)
    opt = torch.optim.AdamW(rm.parameters(), lr=lr)
    rm.train()

    def bt(idx: torch.Tensor) -> torch.Tensor:
        return bt_loss(rm.sequence_score(chosen[idx], eos_id), rm.sequence_score(rejected[idx], eos_id), margin,
                       center_coef)

    def mc(idx: torch.Tensor) -> torch.Tensor:
        return max_consistency_loss(rm, chosen[idx], min_prefix, detach_target, eos_id)

    phases = {"alternate": (bt, mc), "joint": (lambda idx: bt(idx) + lam * mc(idx),)}[schedule]
    history = []
    for _ in range(rounds):
        for loss_fn in phases:
            losses = [_step(opt, loss_fn(idx)) for idx in _batches(len(chosen), batch_size, gen)]
            history.append(sum(losses) / len(losses))
    rm.eval()
    return history


def train_scalar_rm(rm: ScalarRewardModel, chosen: torch.Tensor, rejected: torch.Tensor, epochs: int = 7,
                    lr: float = 1e-3, batch_size: int = 128, prefixes: bool = False, seed: Seed = 0) -> list[float]:
    """BT training of a scalar RM in place: on full pairs (the ARGS RM) or, ``prefixes=True``, on equal-length
    prefixes of each pair, a random cut per batch (the PARGS / CD-style prefix RM). Returns epoch mean losses."""
    check_instance(rm, "rm", ScalarRewardModel)
    chosen, rejected = _pairs(chosen, rejected)
    epochs = check_scalar(epochs, "epochs", "int", min=1)
    lr, batch_size = _lr_batch(lr, batch_size)
    prefixes = check_bool(prefixes, "prefixes")
    gen = torch_generator(seed)
    opt = torch.optim.AdamW(rm.parameters(), lr=lr)
    L = chosen.shape[1]
    rm.train()
    history = []
    for _ in range(epochs):
        losses = []
        for idx in _batches(len(chosen), batch_size, gen):
            cut = int(torch.randint(2, L + 1, (1,), generator=gen)) if prefixes else L
            losses.append(_step(opt, bt_loss(rm(chosen[idx, :cut]), rm(rejected[idx, :cut]))))
        history.append(sum(losses) / len(losses))
    rm.eval()
    return history


def train_lm(lm: nn.Module, sequences: torch.Tensor, steps: int = 300, lr: float = 3e-3, batch_size: int = 256,
             seed: Seed = 0) -> list[float]:
    """Next-token cross-entropy training of a causal LM in place on ``sequences`` ``[N, L]``; step losses."""
    check_instance(lm, "lm", nn.Module)
    sequences = _ids(sequences, "sequences", min_len=2)
    steps = check_scalar(steps, "steps", "int", min=1)
    lr, batch_size = _lr_batch(lr, batch_size)
    gen = torch_generator(seed)
    opt = torch.optim.AdamW(lm.parameters(), lr=lr)
    lm.train()
    out = []
    for _ in range(steps):
        batch = sequences[torch.randint(0, len(sequences), (batch_size,), generator=gen)]
        logits = _logits(lm(batch[:, :-1]))
        out.append(_step(opt, F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))))
    lm.eval()
    return out


def sequence_logprob(lm: nn.Module, ids: torch.Tensor, prompt_len: int = 1) -> torch.Tensor:
    """Sum of the LM's log-probabilities of the response tokens ``ids[:, prompt_len:]``, ``[B]``."""
    check_instance(lm, "lm", nn.Module)
    ids = _ids(ids, "ids", min_len=2)
    prompt_len = check_scalar(prompt_len, "prompt_len", "int", min=1, max=ids.shape[1] - 1)
    logp = _logits(lm(ids[:, :-1])).log_softmax(-1).gather(2, ids[:, 1:, None]).squeeze(2)
    return logp[:, prompt_len - 1:].sum(1)


def train_dpo(policy: nn.Module, chosen: torch.Tensor, rejected: torch.Tensor, beta: float = 0.1,
              epochs: int = 3, lr: float = 1e-3, batch_size: int = 128, seed: Seed = 0) -> list[float]:
    """DPO (Rafailov et al., 2023), the offline RLHF baseline: trains ``policy`` in place against a frozen copy
    of itself, ``-log sigma(beta [(log pi - log pi_ref)(y_w) - (log pi - log pi_ref)(y_l)])``; epoch losses."""
    check_instance(policy, "policy", nn.Module)
    chosen, rejected = _pairs(chosen, rejected)
    beta = check_scalar(beta, "beta", "real", min=0.0, inclusive="neither")
    epochs = check_scalar(epochs, "epochs", "int", min=1)
    lr, batch_size = _lr_batch(lr, batch_size)
    ref = copy.deepcopy(policy).eval()
    with torch.no_grad():
        ref_w, ref_l = sequence_logprob(ref, chosen), sequence_logprob(ref, rejected)
    gen = torch_generator(seed)
    opt = torch.optim.AdamW(policy.parameters(), lr=lr)
    policy.train()
    history = []
    for _ in range(epochs):
        losses = []
        for idx in _batches(len(chosen), batch_size, gen):
            margin = (sequence_logprob(policy, chosen[idx]) - ref_w[idx]) - (
                sequence_logprob(policy, rejected[idx]) - ref_l[idx])
            losses.append(_step(opt, -F.logsigmoid(beta * margin).mean()))
        history.append(sum(losses) / len(losses))
    policy.eval()
    return history


def _pick(logits: torch.Tensor, top_k: int, mode: str, gen: torch.Generator) -> torch.Tensor:
    if mode == "greedy":
        return logits.argmax(-1)
    vals, idx = logits.topk(min(top_k, logits.shape[-1]), -1)
    choice = torch.multinomial(vals.softmax(-1), 1, generator=gen)
    return idx.gather(1, choice).squeeze(1)


def _check_generate(lm: Any, prompt_ids: Any, top_k: Any, mode: Any, max_new_tokens: Any, eos_id: Any,
                    k_name: str = "top_k") -> tuple[torch.Tensor, int, str, int, int | None]:
    check_instance(lm, "lm", nn.Module)
    max_len = getattr(lm, "max_len", None)
    prompt_ids = _ids(prompt_ids, "prompt_ids", max_len)
    top_k = check_scalar(top_k, k_name, "int", min=1)
    mode = check_choice(mode, "mode", MODES)
    max_new_tokens = check_scalar(max_new_tokens, "max_new_tokens", "int", min=1)
    if max_len is not None and prompt_ids.shape[1] + max_new_tokens > max_len:
        raise ValueError(f"max_new_tokens={max_new_tokens} with a prompt of {prompt_ids.shape[1]} tokens exceeds "
                         f"the model's max_len {max_len}")
    return prompt_ids, top_k, mode, max_new_tokens, _eos(eos_id)


def _append(ids: torch.Tensor, nxt: torch.Tensor, done: torch.Tensor,
            eos_id: int | None) -> tuple[torch.Tensor, torch.Tensor]:
    if eos_id is not None:
        nxt = torch.where(done, torch.full_like(nxt, eos_id), nxt)
        done = done | (nxt == eos_id)
    return torch.cat([ids, nxt[:, None]], 1), done


def _vocab_match(r: torch.Tensor, logits: torch.Tensor) -> None:
    if r.shape[-1] != logits.shape[-1]:
        raise ValueError(f"rm vocabulary ({r.shape[-1]} scores) must match the lm vocabulary ({logits.shape[-1]})")


@torch.no_grad()
def reward_guided_generate(lm: nn.Module, rm: FaRMARewardModel | None, prompt_ids: torch.Tensor, beta: float = 1.0,
                           top_k: int = 10, mode: str = "topk-sample", max_new_tokens: int = 16,
                           eos_id: int | None = None, seed: Seed = 0) -> tuple[torch.Tensor, CallStats]:
    """FaRMA decoding (Sec. 3.3): ``l = logits_LM(x, y_{<i}) + beta * r(x, y_{<i})``, one LM and one RM call
    per token; keep the top-k of ``l`` and sample from their softmax (``"topk-sample"``) or take the argmax
    (``"greedy"``). ``rm=None`` or ``beta=0`` is base top-k sampling with the same random draws. Rows that
    emitted ``eos_id`` are padded with it; generation stops when every row has. Returns ``(ids, stats)``."""
    prompt_ids, top_k, mode, max_new_tokens, eos_id = _check_generate(lm, prompt_ids, top_k, mode, max_new_tokens,
                                                                      eos_id)
    beta = check_scalar(beta, "beta", "real", min=0.0)
    if rm is not None:
        check_instance(rm, "rm", FaRMARewardModel)
    gen = torch_generator(seed)
    stats, start = CallStats(), time.perf_counter()
    ids, done = prompt_ids, torch.zeros(len(prompt_ids), dtype=torch.bool, device=prompt_ids.device)
    for _ in range(max_new_tokens):
        logits = _logits(lm(ids))[:, -1]
        stats.lm_calls += 1
        if rm is not None and beta > 0:
            r = rm.scores(ids)
            _vocab_match(r, logits)
            logits = logits + beta * r.to(logits.dtype)
            stats.rm_calls += 1
            stats.rm_sequences += len(ids)
        ids, done = _append(ids, _pick(logits, top_k, mode, gen), done, eos_id)
        stats.tokens += 1
        if bool(done.all()):
            break
    stats.seconds = time.perf_counter() - start
    return ids, stats


@torch.no_grad()
def args_generate(lm: nn.Module, rm: ScalarRewardModel, prompt_ids: torch.Tensor, k: int = 10, w: float = 1.0,
                  mode: str = "topk-sample", max_new_tokens: int = 16, eos_id: int | None = None,
                  batched: bool = False, seed: Seed = 0) -> tuple[torch.Tensor, CallStats]:
    """ARGS (Khanov et al., 2024): each of the LM's top-k candidates ``v`` gets ``log pi(v) + w R(y ⊕ v)`` from a
    scalar RM on the expanded sequence: k RM calls per token (``batched=True``: one call on the ``k B`` expanded
    sequences). ``"topk-sample"`` samples from the softmax of the k scores, ``"greedy"`` takes the best."""
    prompt_ids, k, mode, max_new_tokens, eos_id = _check_generate(lm, prompt_ids, k, mode, max_new_tokens, eos_id,
                                                                  "k")
    check_instance(rm, "rm", ScalarRewardModel)
    w = check_scalar(w, "w", "real", min=0.0)
    batched = check_bool(batched, "batched")
    gen = torch_generator(seed)
    stats, start = CallStats(), time.perf_counter()
    ids, done = prompt_ids, torch.zeros(len(prompt_ids), dtype=torch.bool, device=prompt_ids.device)
    for _ in range(max_new_tokens):
        logp = _logits(lm(ids))[:, -1].log_softmax(-1)
        stats.lm_calls += 1
        kk = min(k, logp.shape[-1])
        lp, cand = logp.topk(kk, -1)
        if batched:
            r = rm(torch.cat([ids.repeat_interleave(kk, 0), cand.reshape(-1, 1)], 1)).reshape(len(ids), kk)
            stats.rm_calls += 1
        else:
            r = torch.stack([rm(torch.cat([ids, cand[:, j:j + 1]], 1)) for j in range(kk)], 1)
            stats.rm_calls += kk
        stats.rm_sequences += kk * len(ids)
        if not bool(torch.isfinite(r).all()):
            raise ValueError("the reward model gave non-finite scores")
        score = lp + w * r
        j = score.argmax(-1, keepdim=True) if mode == "greedy" else torch.multinomial(score.softmax(-1), 1,
                                                                                        generator=gen)
        ids, done = _append(ids, cand.gather(1, j).squeeze(1), done, eos_id)
        stats.tokens += 1
        if bool(done.all()):
            break
    stats.seconds = time.perf_counter() - start
    return ids, stats


@torch.no_grad()
def best_of_n(lm: nn.Module, rm: ScalarRewardModel | FaRMARewardModel, prompt_ids: torch.Tensor, n: int = 8,
              top_k: int = 10, max_new_tokens: int = 16, eos_id: int | None = None,
              seed: Seed = 0) -> tuple[torch.Tensor, CallStats]:
    """Best-of-N: sample ``n`` top-k responses per prompt from ``lm`` and keep the one ``rm`` scores highest
    (a scalar RM's output, or a FaRMA RM's :meth:`FaRMARewardModel.sequence_score`); one RM call in all."""
    check_instance(rm, "rm", (ScalarRewardModel, FaRMARewardModel))
    n = check_scalar(n, "n", "int", min=1)
    prompt_ids = _ids(prompt_ids, "prompt_ids", getattr(lm, "max_len", None))
    B = len(prompt_ids)
    ids, stats = reward_guided_generate(lm, None, prompt_ids.repeat(n, 1), top_k=top_k,
                                        max_new_tokens=max_new_tokens, eos_id=eos_id, seed=seed)
    start = time.perf_counter()
    score = rm(ids) if isinstance(rm, ScalarRewardModel) else rm.sequence_score(ids, eos_id)
    stats.rm_calls += 1
    stats.rm_sequences += len(ids)
    best = score.reshape(n, B).argmax(0)
    stats.seconds += time.perf_counter() - start
    return ids.reshape(n, B, -1)[best, torch.arange(B, device=ids.device)], stats


class RewardGuidedLogitsProcessor:
    """FaRMA decoding as a ``transformers`` logits processor, ``(input_ids, scores) -> scores + beta * r`` with all
    but the top-k set to ``-inf``: pass ``LogitsProcessorList([proc])`` as ``logits_processor`` of
    ``model.generate`` (greedy or sampling). The RM's vocabulary must match the LM's; ``calls`` counts RM
    forwards (one per generated token)."""

    def __init__(self, rm: FaRMARewardModel, beta: float = 1.0, top_k: int = 10) -> None:
        self.rm = check_instance(rm, "rm", FaRMARewardModel)
        self.beta = check_scalar(beta, "beta", "real", min=0.0)
        self.top_k = check_scalar(top_k, "top_k", "int", min=1)
        self.calls = 0

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        input_ids = _ids(input_ids, "input_ids")
        scores = check_tensor(scores, "scores", ndim=2, floating=True, shape=(len(input_ids), None))
        with torch.no_grad():
            r = self.rm.scores(input_ids)
        self.calls += 1
        _vocab_match(r, scores)
        out = scores + self.beta * r.to(scores.dtype)
        kth = out.topk(min(self.top_k, out.shape[-1]), -1).values[:, -1:]
        return out.masked_fill(out < kth, float("-inf"))
