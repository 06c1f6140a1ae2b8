"""GSM-∞ (Zhou, Liu, Chen, Tian & Chen, ICML 2025): a controllable grade-school-math problem generator.

Problems are computational graphs: reasoning difficulty is the exact number of operations ``op``,
and context length is set independently by "spider" noise that hangs off the core graph without
changing the answer.  Three subsets: Symbolic (variable assignments), Medium (implicit sums) and
Hard (implicit products), forward and reverse.  Every problem is re-solved by an independent
solver; any model (a Python callable or an OpenAI-compatible server) is evaluated through the same
render -> generate -> extract -> score harness, with sigmoid fits and pass@k for the analysis.

Example
-------
>>> from icml25.reasoning.gsm_infinity import generate_symbolic, generate_realistic, evaluate, OracleModel
>>> p = generate_symbolic(6, target_tokens=500, seed=0)      # 6 core assignments, ~500 tokens
>>> p.op, abs(p.length_tokens - 500) <= 25
(6, True)
>>> q = generate_realistic(8, difficulty="hard", mode="reverse", template="school", seed=1)
>>> evaluate(OracleModel([p, q]), [p, q]).accuracy_by_op()
{6: 1.0, 8: 1.0}
"""

from icml25.reasoning.gsm_infinity.analysis import (
    CurveFit,
    auc,
    first_op_below,
    fit_exponential,
    fit_sigmoid,
    log2_slope,
    pass_at_k,
    sigmoid,
)
from icml25.reasoning.gsm_infinity.benchmark import make_benchmark, problem_seed
from icml25.reasoning.gsm_infinity.evaluate import Results, evaluate
from icml25.reasoning.gsm_infinity.models import (
    BM25,
    CallableModel,
    ChatModel,
    ChatServer,
    ModelRequestError,
    ModelResponseError,
    OpenAICompatibleClient,
    OracleModel,
    RAGModel,
    RandomGuessModel,
    SigmoidModel,
    serve_chat_model,
)
from icml25.reasoning.gsm_infinity.problem import Problem, count_tokens, read_jsonl, validate_record, write_jsonl
from icml25.reasoning.gsm_infinity.realistic import GenerationError, generate_realistic
from icml25.reasoning.gsm_infinity.scoring import extract_integer, extract_variables, score
from icml25.reasoning.gsm_infinity.solver import SolverError, check, solve, solve_realistic, solve_symbolic
from icml25.reasoning.gsm_infinity.symbolic import generate_symbolic

__all__ = [
    "BM25",
    "CallableModel",
    "ChatModel",
    "ChatServer",
    "CurveFit",
    "GenerationError",
    "ModelRequestError",
    "ModelResponseError",
    "OpenAICompatibleClient",
    "OracleModel",
    "Problem",
    "RAGModel",
    "RandomGuessModel",
    "Results",
    "SigmoidModel",
    "SolverError",
    "auc",
    "check",
    "count_tokens",
    "evaluate",
    "extract_integer",
    "extract_variables",
    "first_op_below",
    "fit_exponential",
    "fit_sigmoid",
    "generate_realistic",
    "generate_symbolic",
    "log2_slope",
    "make_benchmark",
    "pass_at_k",
    "problem_seed",
    "read_jsonl",
    "score",
    "serve_chat_model",
    "sigmoid",
    "solve",
    "solve_realistic",
    "solve_symbolic",
    "validate_record",
    "write_jsonl",
]
