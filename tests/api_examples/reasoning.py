"""Valid calls of ``icml25.reasoning`` (modular arithmetic, multi-hop composition, GSM-∞)."""

import functools
import tempfile
from pathlib import Path

import numpy as np

from api_examples._core import Example, Exempt
from icml25 import reasoning
from icml25.reasoning import gsm_infinity as gsm
from icml25.reasoning.gsm_infinity import models as gsm_models

_MESSAGES = [{"role": "user", "content": "What is 1 + 1?"}]
_TEXT = "any text is valid"
_REPLY = "any model reply (None, bytes or text) is scored"
_PATH = "a file path (any name is a valid path)"
_MODEL_NAME = "any model name the server knows"


def _torch():
    import torch

    return torch


@functools.cache
def _symbolic():
    return gsm.generate_symbolic(3, seed=0)


@functools.cache
def _realistic():
    return gsm.generate_realistic(3, seed=0)


def _problems():
    return [_symbolic(), _realistic()]


def _results():
    p, q = _symbolic(), _realistic()
    records = [{"id": f"{p.id}-{op}", "subset": "symbolic", "mode": "forward", "template": "symbolic", "length": 0,
                "op": op, "n_samples": 2, "correct": [op < 4, op < 3], "replies": ["", ""], "error": None}
               for op in range(1, 7)]
    records.append({"id": q.id, "subset": "medium", "mode": "forward", "template": "zoo", "length": 0, "op": 3,
                    "n_samples": 2, "correct": [True, False], "replies": ["", ""], "error": None})
    return gsm.Results(records)


@functools.cache
def _bm25():
    return gsm.BM25(["the cat sat", "a dog ran", "cats and dogs"])


@functools.cache
def _server():
    return gsm.ChatServer(gsm.CallableModel(lambda prompt: "Answer: 2"))


def _client():
    return reasoning.OpenAICompatibleClient(_server().base_url, "stub", timeout=5.0, max_retries=0, backoff=0.0)


def _serve(**kw):
    with gsm.serve_chat_model(**kw) as server:
        return server.base_url


def _chat_server(**kw):
    server = gsm.ChatServer(**kw)
    server.close()
    return server


def _tmp(name):
    return str(Path(tempfile.mkdtemp(prefix="icml25-api-")) / name)


@functools.cache
def _benchmark_file():
    return gsm.write_jsonl(_problems(), _tmp("bench.jsonl"))


def _generate_kwargs():
    return {"messages": list(_MESSAGES), "max_tokens": 16, "temperature": 0.0, "n": 1}


# ---------------------------------------------------------------- modular arithmetic


@functools.cache
def _lwe():
    return reasoning.LWESampler(n=4, q=11, hamming_weight=2, seed=0)


@functools.cache
def _sum_sampler():
    return reasoning.ModularSumSampler(N=3, q=7, seed=0)


@functools.cache
def _modular_model():
    return reasoning.ModularTransformer(3, 7, hidden=8, n_layers=1, n_heads=2, seed=0)


def _lwe_data():
    sampler = reasoning.LWESampler(n=3, q=11, hamming_weight=1, sigma=0.0, seed=0)
    A, b = sampler.sample(6)
    secret = sampler.secret
    return {"predict_fn": lambda a: (a @ secret) % 11, "A": A, "b": b, "q": 11, "hamming_weight": 1, "sigma": 1.0}


def _points():
    torch = _torch()
    g = torch.Generator().manual_seed(0)
    return {"z": torch.randn(3, 2, generator=g), "t": torch.randn(3, 2, generator=g)}


# ---------------------------------------------------------------- multi-hop composition


@functools.cache
def _kg():
    return reasoning.random_kg(n_entities=30, n_relations=3, facts_per_entity=3, seed=0)


@functools.cache
def _splits():
    return reasoning.make_composition_splits(_kg(), phi=1.0, n_test_min=1, max_test=20, seed=0)


@functools.cache
def _tiny_gpt():
    return reasoning.TinyGPT(_splits().vocab_size, d_model=8, n_layers=1, n_heads=2, seed=0)


def _history():
    history = reasoning.History()
    history.steps += [10, 20]
    for split in history.accuracy:
        history.accuracy[split] += [0.5, 1.0]
    return history


def _triples():
    return np.array([[0, 0, 1], [1, 1, 2], [2, 0, 3]])


EXAMPLES = {
    # -- GSM-∞: models
    "icml25.reasoning.gsm_infinity.BM25": Example(gsm.BM25, {"documents": ["the cat", "a dog"], "k1": 1.5, "b": 0.75},
                                                  nonneg=["k1", "b"], skip={"documents": _TEXT}),
    "icml25.reasoning.gsm_infinity.BM25.scores": Example(lambda **kw: _bm25().scores(**kw), {"query": "cat"},
                                                         skip={"query": _TEXT}),
    "icml25.reasoning.gsm_infinity.BM25.top": Example(lambda **kw: _bm25().top(**kw), {"query": "cat", "k": 2},
                                                      positive=["k"], skip={"query": _TEXT}),
    "icml25.reasoning.gsm_infinity.CallableModel": Example(gsm.CallableModel,
                                                           {"fn": lambda prompt: "Answer: 2", "messages": False}),
    "icml25.reasoning.gsm_infinity.CallableModel.generate": Example(
        lambda **kw: gsm.CallableModel(lambda prompt: "Answer: 2").generate(**kw), _generate_kwargs,
        positive=["max_tokens", "n"], nonneg=["temperature"]),
    "icml25.reasoning.gsm_infinity.ChatModel": Exempt("abstract"),
    "icml25.reasoning.gsm_infinity.ChatModel.generate": Exempt("abstract"),
    "icml25.reasoning.gsm_infinity.ChatServer": Example(
        _chat_server, lambda: {"model": gsm.CallableModel(lambda prompt: "x"), "faults": ["500"], "slow_seconds": 0.1},
        nonneg=["slow_seconds"], allow={"faults": "empty"}),
    "icml25.reasoning.gsm_infinity.CurveFit": Exempt("record"),
    "icml25.reasoning.gsm_infinity.Problem": Exempt("record"),
    "icml25.reasoning.gsm_infinity.RandomGuessModel": Example(gsm.RandomGuessModel,
                                                              lambda: {"problems": _problems(), "seed": 0}),
    "icml25.reasoning.gsm_infinity.RandomGuessModel.answer": Example(
        lambda **kw: gsm.RandomGuessModel(_problems()).answer(**kw), lambda: {"problem": _symbolic(), "sample": 0}),
    "icml25.reasoning.gsm_infinity.Results": Exempt("record"),
    "icml25.reasoning.gsm_infinity.Results.first_op_below": Example(lambda **kw: _results().first_op_below(**kw),
                                                                    {"level": 0.5}),
    "icml25.reasoning.gsm_infinity.Results.fit_sigmoid": Example(lambda **kw: _results().fit_sigmoid(**kw),
                                                                 {"bounded": False}),
    "icml25.reasoning.gsm_infinity.Results.pass_at_k": Example(lambda **kw: _results().pass_at_k(**kw),
                                                               {"ks": [1, 2]}),
    "icml25.reasoning.gsm_infinity.Results.auc_at_k": Example(lambda **kw: _results().auc_at_k(**kw),
                                                              {"ks": [1, 2]}),
    "icml25.reasoning.gsm_infinity.Results.to_jsonl": Example(lambda **kw: _results().to_jsonl(**kw),
                                                              lambda: {"path": _tmp("results.jsonl")},
                                                              skip={"path": _PATH}),
    "icml25.reasoning.gsm_infinity.SigmoidModel": Example(
        gsm.SigmoidModel, lambda: {"problems": _problems(), "op50": 12.0, "k": 0.5, "seed": 0, "per_problem": True}),
    "icml25.reasoning.gsm_infinity.SigmoidModel.success_probability": Example(
        lambda **kw: gsm.SigmoidModel(_problems(), per_problem=True).success_probability(**kw),
        lambda: {"problem": _realistic()}),
    "icml25.reasoning.gsm_infinity.SigmoidModel.answer": Example(
        lambda **kw: gsm.SigmoidModel(_problems()).answer(**kw), lambda: {"problem": _realistic(), "sample": 1}),
    # -- GSM-∞: analysis
    "icml25.reasoning.gsm_infinity.auc": Example(gsm.auc, lambda: {"ops": np.array([2.0, 4.0, 6.0]),
                                                                   "acc": np.array([1.0, 0.5, 0.25])},
                                                 paired=[("ops", "acc")]),
    "icml25.reasoning.gsm_infinity.first_op_below": Example(
        gsm.first_op_below, lambda: {"ops": np.array([2.0, 4.0, 6.0]), "acc": np.array([1.0, 0.5, 0.25]),
                                     "level": 0.6}, paired=[("ops", "acc")]),
    "icml25.reasoning.gsm_infinity.fit_exponential": Example(
        gsm.fit_exponential, lambda: {"ops": np.arange(1.0, 7.0), "acc": np.exp(-0.3 * np.arange(1.0, 7.0))},
        paired=[("ops", "acc")]),
    "icml25.reasoning.gsm_infinity.fit_sigmoid": Example(
        gsm.fit_sigmoid, lambda: {"ops": np.arange(1.0, 8.0),
                                  "acc": 1 / (1 + np.exp(0.8 * (np.arange(1.0, 8.0) - 4))), "bounded": False},
        paired=[("ops", "acc")]),
    "icml25.reasoning.gsm_infinity.log2_slope": Example(
        gsm.log2_slope, lambda: {"ks": np.array([1.0, 2.0, 4.0, 8.0]), "values": np.array([0.2, 0.3, 0.45, 0.55])},
        paired=[("ks", "values")]),
    "icml25.reasoning.gsm_infinity.pass_at_k": Example(gsm.pass_at_k, {"n": 5, "c": 2, "k": 2}, positive=["n", "k"]),
    "icml25.reasoning.gsm_infinity.sigmoid": Example(gsm.sigmoid, lambda: {"op": np.array([2.0, 12.0]), "op50": 12.0,
                                                                           "k": 0.5},
                                                     allow={"op": ("empty", "ndim")}),
    # -- GSM-∞: problems, scoring, solving, files
    "icml25.reasoning.gsm_infinity.check": Example(gsm.check, lambda: {"problem": _realistic()}),
    "icml25.reasoning.gsm_infinity.count_tokens": Example(gsm.count_tokens, {"text": "assign V1 = 2."},
                                                          skip={"text": _TEXT}),
    "icml25.reasoning.gsm_infinity.extract_integer": Example(gsm.extract_integer, {"reply": "Answer: 12."},
                                                             skip={"reply": _REPLY}),
    "icml25.reasoning.gsm_infinity.extract_variables": Example(gsm.extract_variables, {"reply": "ANSWER: V1, V2"},
                                                               skip={"reply": _REPLY}),
    "icml25.reasoning.gsm_infinity.problem_seed": Example(gsm.problem_seed, {"seed": 0, "op": 3, "index": 0}),
    "icml25.reasoning.gsm_infinity.read_jsonl": Example(gsm.read_jsonl, lambda: {"path": _benchmark_file()},
                                                        skip={"path": "a file path (a missing file raises "
                                                                      "FileNotFoundError)"}),
    "icml25.reasoning.gsm_infinity.score": Example(
        gsm.score, lambda: {"problem": _realistic(), "reply": "Answer: 1.", "extractor": gsm.extract_integer},
        skip={"reply": _REPLY}),
    "icml25.reasoning.gsm_infinity.serve_chat_model": Example(
        _serve, lambda: {"model": gsm.CallableModel(lambda prompt: "x"), "faults": ["429"], "slow_seconds": 0.1},
        nonneg=["slow_seconds"], allow={"faults": "empty"}),
    "icml25.reasoning.gsm_infinity.solve": Example(gsm.solve, lambda: {"problem": _symbolic()}),
    "icml25.reasoning.gsm_infinity.solve_realistic": Example(
        gsm.solve_realistic, lambda: {"equations": list(_realistic().equations), "query": _realistic().query,
                                      "mode": "forward"}),
    "icml25.reasoning.gsm_infinity.solve_symbolic": Example(
        gsm.solve_symbolic, lambda: {"equations": list(_symbolic().equations), "value": int(_symbolic().query)},
        allow={"value": "neg"}),
    "icml25.reasoning.gsm_infinity.validate_record": Example(gsm.validate_record,
                                                             lambda: {"record": _symbolic().to_json()}),
    "icml25.reasoning.gsm_infinity.write_jsonl": Example(gsm.write_jsonl, lambda: {"records": _problems(),
                                                                                   "path": _tmp("out.jsonl")},
                                                         skip={"path": _PATH}, allow={"records": "empty"}),
    "icml25.reasoning.gsm_infinity.models.as_chat_model": Example(
        gsm_models.as_chat_model, lambda: {"model": gsm.CallableModel(lambda prompt: "x")}),
    "icml25.reasoning.gsm_infinity.models.prompt_of": Example(gsm_models.prompt_of,
                                                              lambda: {"messages": list(_MESSAGES)}),
    # -- GSM-∞ names exported by icml25.reasoning
    "icml25.reasoning.OpenAICompatibleClient": Example(
        reasoning.OpenAICompatibleClient,
        {"base_url": "http://127.0.0.1:9/v1", "model": "stub", "api_key": "key", "timeout": 5.0, "max_retries": 1,
         "backoff": 0.5, "extra_body": {"top_p": 1.0}},
        positive=["timeout"], nonneg=["backoff"], skip={"model": _MODEL_NAME, "api_key": "any key string"}),
    "icml25.reasoning.OpenAICompatibleClient.generate": Example(lambda **kw: _client().generate(**kw),
                                                                _generate_kwargs, positive=["max_tokens", "n"],
                                                                nonneg=["temperature"]),
    "icml25.reasoning.OracleModel": Example(reasoning.OracleModel, lambda: {"problems": _problems(), "solver": True}),
    "icml25.reasoning.OracleModel.answer": Example(lambda **kw: reasoning.OracleModel(_problems(), True).answer(**kw),
                                                   lambda: {"problem": _realistic(), "sample": 0}),
    "icml25.reasoning.OracleModel.generate": Example(
        lambda **kw: reasoning.OracleModel(_problems()).generate(**kw),
        lambda: {**_generate_kwargs(), "messages": list(_symbolic().messages)}, positive=["max_tokens", "n"],
        nonneg=["temperature"]),
    "icml25.reasoning.RAGModel": Example(reasoning.RAGModel, lambda: {"problems": _problems(), "k": 2},
                                         positive=["k"]),
    "icml25.reasoning.RAGModel.retrieve": Example(lambda **kw: reasoning.RAGModel(_problems(), 2).retrieve(**kw),
                                                  lambda: {"problem": _realistic()}),
    "icml25.reasoning.RAGModel.answer": Example(lambda **kw: reasoning.RAGModel(_problems(), 2).answer(**kw),
                                                lambda: {"problem": _symbolic(), "sample": 0}),
    "icml25.reasoning.evaluate": Example(
        reasoning.evaluate, lambda: {"model": reasoning.OracleModel(_problems()), "problems": _problems(),
                                     "n_samples": 2, "temperature": 0.0, "max_tokens": 16, "workers": 1,
                                     "extractor": None},
        positive=["n_samples", "max_tokens", "workers"], nonneg=["temperature"]),
    "icml25.reasoning.generate_realistic": Example(
        reasoning.generate_realistic,
        lambda: {"op": 3, "difficulty": "medium", "mode": "forward", "template": "zoo", "n_noise": 2,
                 "tokenizer": gsm.count_tokens, "seed": 0, "max_attempts": 100, "number_range": 5,
                 "max_value": 1000, "few_shot": True, "stats": {}},
        positive=["op", "max_attempts", "number_range", "max_value"]),
    "icml25.reasoning.generate_symbolic": Example(reasoning.generate_symbolic,
                                                  {"op": 3, "n_noise": 2, "tokenizer": gsm.count_tokens, "seed": 0},
                                                  positive=["op"]),
    "icml25.reasoning.make_benchmark": Example(
        reasoning.make_benchmark,
        lambda: {"subset": "medium", "ops": [2, 3], "per_op": 1, "lengths": [None, 0], "seed": 0,
                 "mode": "forward", "template": "zoo", "tokenizer": gsm.count_tokens, "max_attempts": 100},
        positive=["per_op", "max_attempts"]),
    # -- modular arithmetic
    "icml25.reasoning.LWESampler": Example(reasoning.LWESampler,
                                           {"n": 4, "q": 11, "hamming_weight": 2, "sigma": 3.0, "seed": 0},
                                           positive=["n", "q", "hamming_weight"], nonneg=["sigma"]),
    "icml25.reasoning.LWESampler.sample": Example(lambda **kw: _lwe().sample(**kw), {"m": 3}),
    "icml25.reasoning.ModularSumSampler": Example(
        reasoning.ModularSumSampler,
        lambda: {"N": 3, "q": 7, "strategy": "inv_sqrt", "function": "sum", "secret": np.array([1, 0, 1]),
                 "seed": 0}, positive=["N", "q"]),
    "icml25.reasoning.ModularSumSampler.sample": Example(lambda **kw: _sum_sampler().sample(**kw),
                                                         {"m": 3, "max_nonzero": 2}, positive=["max_nonzero"]),
    "icml25.reasoning.ModularTransformer": Example(
        reasoning.ModularTransformer,
        {"N": 3, "q": 7, "hidden": 8, "n_layers": 1, "n_heads": 2, "emb_input": "angular", "head": "angular",
         "positional": True, "final_norm": False, "seed": 0},
        positive=["N", "q", "hidden", "n_layers", "n_heads"]),
    "icml25.reasoning.ModularTransformer.forward": Example(
        lambda **kw: _modular_model()(**kw), lambda: {"x": _torch().tensor([[0, 1, 2], [3, 4, 6]])}),
    "icml25.reasoning.NormRegularizedAngularLoss": Example(reasoning.NormRegularizedAngularLoss,
                                                           {"alpha": 0.1, "eps": 1e-6},
                                                           nonneg=["alpha"], positive=["eps"]),
    "icml25.reasoning.NormRegularizedAngularLoss.forward": Example(
        lambda **kw: reasoning.NormRegularizedAngularLoss()(**kw), _points, paired=[("z", "t")],
        allow={"z": "nan", "t": "nan"}),
    "icml25.reasoning.recover_binary_secret": Example(reasoning.recover_binary_secret, _lwe_data,
                                                      paired=[("A", "b")], positive=["q", "hamming_weight"],
                                                      nonneg=["sigma"]),
    # -- multi-hop composition
    "icml25.reasoning.CompositionSplits": Exempt("record"),
    "icml25.reasoning.CompositionSplits.entity_token": Example(lambda **kw: _splits().entity_token(**kw),
                                                               {"e": np.array([0, 1])},
                                                               allow={"e": ("empty", "ndim")}),  # elementwise
    "icml25.reasoning.CompositionSplits.encode": Example(lambda **kw: _splits().encode(**kw),
                                                         lambda: {"facts": _splits().atomic[:3].copy()},
                                                         allow={"facts": "empty"}),  # encodes no facts
    "icml25.reasoning.History": Exempt("record"),
    "icml25.reasoning.History.final": Example(lambda **kw: _history().final(**kw), {"split": "test_id"}),
    "icml25.reasoning.KnowledgeGraph": Example(
        reasoning.KnowledgeGraph, lambda: {"triples": _triples(), "entity_names": ["a", "b", "c", "d"],
                                           "relation_names": ["r", "s"]},
        skip={"entity_names": "any names", "relation_names": "any names"},
        allow={"triples": "empty"}),  # documented: an empty KG becomes shape (0, 3)
    "icml25.reasoning.KnowledgeGraph.functional_part": Example(lambda **kw: _kg().functional_part(**kw),
                                                               {"on_ambiguous": "raise"}),
    "icml25.reasoning.KnowledgeGraph.two_hop_index": Example(
        lambda **kw: _kg().two_hop_index(**kw), lambda: {"mask": np.ones(len(_kg().triples), dtype=bool)}),
    "icml25.reasoning.KnowledgeGraph.two_hop": Example(lambda **kw: _kg().two_hop(**kw), {"r1": 0, "r2": 1}),
    "icml25.reasoning.TinyGPT": Example(
        reasoning.TinyGPT, {"vocab_size": 10, "d_model": 8, "n_layers": 1, "n_heads": 2, "max_len": 4, "d_ff": 16,
                            "dropout": 0.0, "seed": 0},
        positive=["vocab_size", "d_model", "n_layers", "n_heads", "max_len", "d_ff"], nonneg=["dropout"]),
    "icml25.reasoning.TinyGPT.forward": Example(
        lambda **kw: _tiny_gpt()(**kw), lambda: {"tokens": _torch().tensor([[1, 2, 3, 0], [2, 1, 0, 3]]),
                                                 "positions": _torch().tensor([3, 2])},
        paired=[("tokens", "positions")]),
    "icml25.reasoning.assert_no_leakage": Example(reasoning.assert_no_leakage, lambda: {"splits": _splits()}),
    "icml25.reasoning.augment_with_synthetic_entities": Example(
        reasoning.augment_with_synthetic_entities,
        lambda: {"splits": _splits(), "target_phi": 2.0, "mode": "random_entities", "seed": 0, "max_new": 50},
        positive=["max_new"], nonneg=["target_phi"]),
    "icml25.reasoning.bridge_free_accuracy": Example(
        reasoning.bridge_free_accuracy, lambda: {"train_inferred": _splits().train_inferred.copy(),
                                                 "test": _splits().test_id.copy()},
        allow={"test": "empty"}),  # documented: nan for an empty test set
    "icml25.reasoning.geonames_kg": Example(reasoning.geonames_kg, {"n_cities": 20, "seed": 0, "all_countries": False,
                                                                    "max_cities_per_country": 5},
                                            positive=["n_cities", "max_cities_per_country"]),
    "icml25.reasoning.leakage_counts": Example(reasoning.leakage_counts, lambda: {"splits": _splits()}),
    "icml25.reasoning.make_composition_splits": Example(
        reasoning.make_composition_splits,
        lambda: {"kg": _kg(), "phi": 1.0, "ood_frac": 0.1, "max_test": 20, "n_test_min": 1, "on_ambiguous": "raise",
                 "seed": 0}, positive=["max_test"], nonneg=["phi", "ood_frac"]),
    "icml25.reasoning.random_kg": Example(reasoning.random_kg,
                                          {"n_entities": 20, "n_relations": 3, "facts_per_entity": 2, "seed": 0},
                                          positive=["n_entities", "n_relations", "facts_per_entity"]),
    "icml25.reasoning.steps_to_accuracy": Example(reasoning.steps_to_accuracy,
                                                  lambda: {"history": _history(), "split": "test_id", "level": 0.9}),
    "icml25.reasoning.train_facts": Example(
        reasoning.train_facts,
        lambda: {"model": reasoning.TinyGPT(_splits().vocab_size, d_model=8, n_layers=1, n_heads=2, seed=0),
                 "splits": _splits(), "steps": 1, "batch_size": 8, "lr": 1e-3, "weight_decay": 0.1, "warmup": 1,
                 "eval_every": 1, "eval_size": 8, "grad_clip": 1.0, "seed": 0, "history": reasoning.History()},
        positive=["steps", "batch_size", "lr", "eval_every", "eval_size", "grad_clip"], nonneg=["weight_decay"],
        allow={"grad_clip": "none"}),
}


def _saved_results():
    return str(_results().to_jsonl(_tmp("saved-results.jsonl")))


EXAMPLES.update({
    "icml25.reasoning.KnowledgeGraph.from_named_triples": Example(
        reasoning.KnowledgeGraph.from_named_triples,
        lambda: {"named": [("paris", "capital_of", "france"), ("france", "in", "europe")]}, allow={"named": "empty"}),
    "icml25.reasoning.gsm_infinity.Problem.from_json": Example(gsm.Problem.from_json,
                                                               lambda: {"record": _symbolic().to_json()}),
    "icml25.reasoning.gsm_infinity.Results.from_jsonl": Example(gsm.Results.from_jsonl,
                                                                lambda: {"path": _saved_results()},
                                                                skip={"path": _PATH}),
})


# ---------------------------------------------------------------- paper-module names


def _ma():
    from icml25.reasoning import modular_arithmetic

    return modular_arithmetic


def _gm():
    from icml25.reasoning import grokking_multihop

    return grokking_multihop


def _train_kwargs():
    ma = _ma()
    return {"model": ma.ModularTransformer(3, 7, hidden=8, n_layers=1, n_heads=2, seed=0),
            "sampler": ma.ModularSumSampler(N=3, q=7, seed=0), "steps": 2, "batch_size": 4, "lr": 1e-3,
            "weight_decay": 0.1, "warmup": 1, "loss": "custom", "alpha": 0.1, "curriculum": "easy_all",
            "clip_grad_norm": 1.0, "log_every": 1, "seed": 0}


_MA = "icml25.reasoning.modular_arithmetic."
_ELEMENTWISE = ("empty", "ndim")  # elementwise maps: any shape, none included, is valid

EXAMPLES.update({
    "icml25.reasoning.grokking_multihop.evaluate": Example(
        lambda **kw: _gm().evaluate(**kw),
        lambda: {"model": _tiny_gpt(), "splits": _splits(), "facts": _splits().test_id.copy(), "batch_size": 4},
        positive=["batch_size"], allow={"facts": "empty"}),  # documented: nan when there are no facts
    _MA + "AngularMSE": Example(lambda **kw: _ma().AngularMSE(**kw), {}),
    _MA + "AngularMSE.forward": Example(lambda **kw: _ma().AngularMSE()(**kw), _points, paired=[("z", "t")],
                                        allow={"z": "nan", "t": "nan"}),  # a loss propagates NaN as torch does
    _MA + "WrappedAngleLoss": Example(lambda **kw: _ma().WrappedAngleLoss(**kw), {}),
    _MA + "WrappedAngleLoss.forward": Example(lambda **kw: _ma().WrappedAngleLoss()(**kw), _points,
                                              paired=[("z", "t")], allow={"z": "nan", "t": "nan"}),
    _MA + "circular_distance": Example(lambda **kw: _ma().circular_distance(**kw),
                                       lambda: {"a": np.array([0, 1, 6]), "b": np.array([10, 10, 0]), "q": 11},
                                       paired=[("a", "b")], positive=["q"]),
    _MA + "evaluate": Example(lambda **kw: _ma().evaluate(**kw),
                              lambda: {"model": _modular_model(), "n_test": 8, "taus": (0.01, 0.1),
                                       "function": "sum", "seed": 0},
                              positive=["n_test"], allow={"taus": "empty"}),  # no tau-accuracies asked for
    _MA + "from_circle": Example(lambda **kw: _ma().from_circle(**kw), lambda: {"z": _points()["z"], "q": 7},
                                 positive=["q"], allow={"z": _ELEMENTWISE}),
    _MA + "make_loss": Example(lambda **kw: _ma().make_loss(**kw), {"name": "custom", "alpha": 0.1},
                               nonneg=["alpha"], labels={"name": "loss"}),
    _MA + "nonzero_count_probs": Example(lambda **kw: _ma().nonzero_count_probs(**kw),
                                         {"N": 3, "strategy": "uniform", "q": 7}, positive=["N", "q"]),
    _MA + "predict": Example(lambda **kw: _ma().predict(**kw),
                             lambda: {"model": _modular_model(), "x": np.array([[0, 1, 2], [3, 4, 6]]),
                                      "batch_size": 1}, positive=["batch_size"]),
    _MA + "sample_inputs": Example(lambda **kw: _ma().sample_inputs(**kw),
                                   {"n_samples": 4, "N": 3, "q": 7, "strategy": "inv_sqrt", "seed": 0,
                                    "max_nonzero": 2}, positive=["N", "q", "max_nonzero"]),
    _MA + "targets": Example(lambda **kw: _ma().targets(**kw),
                             lambda: {"x": np.array([[0, 1, 2], [3, 4, 6]]), "q": 7, "function": "sum",
                                      "secret": np.array([1, 0, 1])},
                             positive=["q"], allow={"x": "empty"}),  # no rows: no targets
    _MA + "to_circle": Example(lambda **kw: _ma().to_circle(**kw), lambda: {"x": _torch().tensor([0, 1, 3]), "q": 7},
                               positive=["q"], allow={"x": _ELEMENTWISE}),
    _MA + "train": Example(lambda **kw: _ma().train(**kw), _train_kwargs,
                           positive=["steps", "batch_size", "lr", "log_every"],
                           nonneg=["weight_decay", "warmup", "alpha", "clip_grad_norm"]),
})
