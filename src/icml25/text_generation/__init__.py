"""Text generation: FaRMA reward-guided decoding (:mod:`icml25.text_generation.reward_guided_generation`),
its baselines (ARGS, PARGS-style prefix RM, best-of-N, DPO), a ``transformers`` logits processor and the
enumerable token world it is tested on (:mod:`icml25.data.token_world`).

Everything here needs the ``torch`` extra; names are imported lazily.
"""

from importlib import import_module

_M = "icml25.text_generation.reward_guided_generation"
_EXPORTS = {name: _M for name in (
    "TinyCausalLM", "FaRMARewardModel", "ScalarRewardModel", "CallStats", "bt_loss", "max_consistency_loss",
    "train_farma", "train_scalar_rm", "train_lm", "sequence_logprob", "train_dpo", "reward_guided_generate",
    "args_generate", "best_of_n", "RewardGuidedLogitsProcessor")}
_EXPORTS["TokenWorld"] = "icml25.data.token_world"

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'icml25.text_generation' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
