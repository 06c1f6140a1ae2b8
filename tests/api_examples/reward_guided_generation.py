"""Valid calls of ``icml25.text_generation`` (FaRMA, its losses, decoders and baselines, the token world)."""

from functools import cache

import numpy as np
import torch

from api_examples._core import Example, Exempt
from icml25 import text_generation as tg

P = "icml25.text_generation."


@cache
def _world():
    return tg.TokenWorld(vocab=3, length=3, seed=0)


def _lm(seed=0):
    return tg.TinyCausalLM(5, dim=8, n_layers=1, n_heads=2, max_len=6, seed=seed)


@cache
def _frozen_lm():
    return _lm().eval()


@cache
def _rm():
    return tg.FaRMARewardModel(_lm(seed=1)).eval()


@cache
def _scalar():
    return tg.ScalarRewardModel(_lm(seed=2)).eval()


def _ids():
    return torch.tensor([[4, 0, 1, 2], [4, 2, 2, 0], [4, 1, 0, 0]])


def _rejected():
    return torch.tensor([[4, 1, 1, 2], [4, 0, 2, 1], [4, 2, 0, 1]])


def _prompt():
    return torch.full((2, 1), 4)


def _pairs():
    return {"chosen": _ids(), "rejected": _rejected()}


_GEN = {"max_new_tokens": 3, "eos_id": 3}
_MODULE = {"backbone": "any nn.Module; checked by type"}

EXAMPLES = {
    P + "TinyCausalLM": Example(tg.TinyCausalLM, {"vocab_size": 5, "dim": 8, "n_layers": 1, "n_heads": 2,
                                                   "max_len": 6},
                                positive=("vocab_size", "dim", "n_layers", "n_heads", "max_len")),
    P + "TinyCausalLM.hidden": Example(lambda **kw: _frozen_lm().hidden(**kw), lambda: {"ids": _ids()}),
    P + "TinyCausalLM.forward": Example(lambda **kw: _frozen_lm()(**kw), lambda: {"ids": _ids()}),
    P + "FaRMARewardModel": Example(tg.FaRMARewardModel, lambda: {"backbone": _lm()}),
    P + "FaRMARewardModel.forward": Example(lambda **kw: _rm()(**kw), lambda: {"ids": _ids()}),
    P + "FaRMARewardModel.scores": Example(lambda **kw: _rm().scores(**kw), lambda: {"prefix_ids": _ids()}),
    P + "FaRMARewardModel.sequence_score": Example(lambda **kw: _rm().sequence_score(**kw),
                                                   lambda: {"ids": _ids(), "eos_id": 3}),
    P + "ScalarRewardModel": Example(tg.ScalarRewardModel, lambda: {"backbone": _lm()}),
    P + "ScalarRewardModel.forward": Example(lambda **kw: _scalar()(**kw), lambda: {"ids": _ids()}),
    P + "CallStats": Exempt("record"),
    P + "bt_loss": Example(tg.bt_loss, lambda: {"chosen_scores": torch.tensor([1.0, 0.5]),
                                                 "rejected_scores": torch.tensor([0.0, 0.7]), "margin": 0.1,
                                                 "center_coef": 0.01},
                           nonneg=("center_coef",)),
    P + "max_consistency_loss": Example(tg.max_consistency_loss, lambda: {"rm": _rm(), "sequences": _ids(),
                                                                           "eos_id": 3},
                                        positive=("min_prefix",)),
    P + "train_farma": Example(tg.train_farma, lambda: {"rm": tg.FaRMARewardModel(_lm()), **_pairs(), "rounds": 1,
                                                         "eos_id": 3},
                               positive=("rounds", "lr", "batch_size", "min_prefix"), nonneg=("lam", "center_coef"),
                               paired=[("chosen", "rejected")]),
    P + "train_scalar_rm": Example(tg.train_scalar_rm, lambda: {"rm": tg.ScalarRewardModel(_lm()), **_pairs(),
                                                                 "epochs": 1},
                                   positive=("epochs", "lr", "batch_size"), paired=[("chosen", "rejected")]),
    P + "train_lm": Example(tg.train_lm, lambda: {"lm": _lm(), "sequences": _ids(), "steps": 2, "batch_size": 4},
                            positive=("steps", "lr", "batch_size")),
    P + "sequence_logprob": Example(tg.sequence_logprob, lambda: {"lm": _frozen_lm(), "ids": _ids()},
                                    positive=("prompt_len",)),
    P + "train_dpo": Example(tg.train_dpo, lambda: {"policy": _lm(), **_pairs(), "epochs": 1},
                             positive=("beta", "epochs", "lr", "batch_size"), paired=[("chosen", "rejected")]),
    P + "reward_guided_generate": Example(tg.reward_guided_generate,
                                          lambda: {"lm": _frozen_lm(), "rm": _rm(), "prompt_ids": _prompt(), **_GEN},
                                          allow={"rm": "none"}, nonneg=("beta",),
                                          positive=("top_k", "max_new_tokens")),
    P + "args_generate": Example(tg.args_generate, lambda: {"lm": _frozen_lm(), "rm": _scalar(),
                                                             "prompt_ids": _prompt(), "k": 3, **_GEN},
                                 nonneg=("w",), positive=("k", "max_new_tokens")),
    P + "best_of_n": Example(tg.best_of_n, lambda: {"lm": _frozen_lm(), "rm": _scalar(), "prompt_ids": _prompt(),
                                                     "n": 2, **_GEN},
                             positive=("n", "top_k", "max_new_tokens")),
    P + "RewardGuidedLogitsProcessor": Example(tg.RewardGuidedLogitsProcessor, lambda: {"rm": _rm()},
                                               nonneg=("beta",), positive=("top_k",)),
    P + "TokenWorld": Example(tg.TokenWorld, {"vocab": 3, "length": 3},
                              nonneg=("bonus",), positive=("payoff_prob",)),
    P + "TokenWorld.reward": Example(lambda **kw: _world().reward(**kw), {"y": np.array([[0, 1, 2], [2, 3, 0]])},
                                     allow={"y": "empty"}),
    P + "TokenWorld.with_bos": Example(lambda **kw: _world().with_bos(**kw), {"y": np.array([[0, 1, 2]])},
                                       allow={"y": "empty"}),
    P + "TokenWorld.sample": Example(lambda **kw: _world().sample(**kw), {"n": 4, "seed": 0}),
    P + "TokenWorld.sample_pairs": Example(lambda **kw: _world().sample_pairs(**kw), {"n": 4, "seed": 0}),
    P + "TokenWorld.greedy": Example(lambda **kw: _world().greedy(**kw), lambda: {"q": _world().q_max()}),
}
