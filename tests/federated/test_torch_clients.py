import numpy as np
import pytest

torch = pytest.importorskip("torch")

from icml25.data import dirichlet_partition  # noqa: E402
from icml25.data.tensors import digits_tensors  # noqa: E402
from icml25.federated import FedAvg, MalformedMessageError, simulate  # noqa: E402
from icml25.federated.torch_clients import (  # noqa: E402
    TorchClassifierClient,
    accuracy_evaluator,
    load_arrays,
    module_to_arrays,
)
from icml25.utils.nn import make_mlp  # noqa: E402


def model_fn():
    return make_mlp([64, 32, 10], seed=0)


def test_fedavg_on_digits_learns_and_is_deterministic():
    data = digits_tensors(seed=0)
    parts = dirichlet_partition(data.y_train.numpy(), 4, alpha=0.5, seed=0)

    def run():
        clients = [TorchClassifierClient(model_fn, data.X_train[p], data.y_train[p], epochs=3, lr=0.1, seed=i)
                   for i, p in enumerate(parts)]
        strategy = FedAvg(module_to_arrays(model_fn()), evaluate_fn=accuracy_evaluator(model_fn, data.X_test,
                                                                                       data.y_test))
        return simulate(clients, strategy, rounds=5)

    first, second = run(), run()
    assert first.curve("accuracy")[-1] > 0.8
    assert first.curve("accuracy") == second.curve("accuracy")
    n_params = sum(p.numel() for p in model_fn().parameters())
    assert first.ledger.total("up") == 5 * 4 * 32 * n_params


def test_load_arrays_checks_layout():
    model = model_fn()
    arrays = module_to_arrays(model)
    arrays.pop("0.weight")
    with pytest.raises(MalformedMessageError, match="missing"):
        load_arrays(model, arrays)
    with pytest.raises(ValueError, match="optimizer"):
        TorchClassifierClient(model_fn, torch.zeros(2, 64), torch.zeros(2, dtype=torch.long), optimizer="lbfgs")
    assert np.isfinite(next(iter(module_to_arrays(model).values()))).all()


def test_load_arrays_into_a_bfloat16_model():
    model = model_fn().to(torch.bfloat16)
    arrays = module_to_arrays(model_fn())
    load_arrays(model, arrays)
    assert model[0].weight.dtype == torch.bfloat16
    np.testing.assert_allclose(model[0].weight.detach().float().numpy(), arrays["0.weight"], rtol=1e-2, atol=1e-2)
